package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/web"
)

// TestPanelDesktop supervises a desktop session in the panel, in an
// operator's Chromium: the scripted model's click on the desktop's terminal
// waits for the operator, whose approval lets it run (the card says the
// rules see no DOM); then the operator takes over, types into the terminal
// from the panel, and hands the desktop back. The terminal's shell writes
// what it receives to a file, which the test reads.
func TestPanelDesktop(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	proof := filepath.Join(t.TempDir(), "proof.txt")

	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := web.New(ctx, web.Config{DataDir: t.TempDir(), Token: panelToken, Logger: log,
		Displays: []string{"desktop"}, ApprovalTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatalf("web.New() = %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Server.Close() = %v", err)
		}
	})
	env := &panelEnv{url: hs.URL, bought: new(atomic.Int32)}
	env.tab = operatorTab(t)

	spec, _ := json.Marshal(map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "type into the terminal"}},
		"model": map[string]any{"provider": "script", "turns": []any{
			map[string]any{"say": "I click into the terminal.", "actions": []any{map[string]any{"type": "click", "x": 100, "y": 100}}},
			map[string]any{"say": "Done."},
		}},
		"display": map[string]any{"backend": "desktop", "width": 1024, "height": 768,
			"command": []string{"xterm", "-geometry", "80x24+0+0", "-e", "sh", "-c", "cat > " + proof}},
		"approvals": map[string]any{"supervise": "all"},
	})
	req, _ := http.NewRequestWithContext(ctx, "PUT", hs.URL+"/session", bytes.NewReader(spec))
	req.Header.Set("Authorization", "Bearer "+panelToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Session-Id")
	io.Copy(io.Discard, resp.Body) // ends once the turn waits for the operator
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("PUT /session = %d, want 200 with a session id", resp.StatusCode)
	}

	env.login(t)
	env.do(t, "open the session", 60*time.Second,
		chromedp.Navigate(env.url+"/#/session/"+id),
		chromedp.WaitVisible("#session-view"),
	)
	m := env.waitMarker(t)
	if m.W != 1024 || m.H != 768 || m.X < 90 || m.X > 110 || m.Y < 90 || m.Y > 110 {
		t.Errorf("approval card marker at (%.0f, %.0f) of a %vx%v screenshot, want at (100, 100) of 1024x768", m.X, m.Y, m.W, m.H)
	}
	if card := eval[string](t, env, `document.querySelector('#approval-list .approval').textContent`); !strings.Contains(card, "no DOM") {
		t.Errorf("approval card %q does not say that the rules see no DOM", card)
	}
	env.do(t, "approve the click", 10*time.Second, chromedp.Click(`#approval-list .approval .approve`))
	env.waitEnd(t)

	env.do(t, "take over, type into the terminal, press Enter, hand back", 60*time.Second,
		chromedp.WaitVisible("#live-img"),
		chromedp.Click("#takeover"),
		chromedp.WaitVisible("#tk-text"),
		chromedp.SendKeys("#tk-text", "panel-ok"),
		chromedp.Click(`#type-form button[type="submit"]`),
		chromedp.Poll[chromedp.Void](`document.getElementById('tk-text').value === ''`),
		chromedp.Click("#tk-enter"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline li[data-type="operator_input"]').length === 2`),
		chromedp.Click("#handback"),
		chromedp.WaitVisible("#takeover"),
	)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := os.ReadFile(proof)
		if err == nil && string(got) == "panel-ok\n" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s = %q (%v) at the deadline, want %q: the operator's typing did not reach the terminal\n%s",
				proof, got, err, "panel-ok\n", env.diagnose(t))
		case <-tick.C:
		}
	}
}
