package e2e

// The panel with the server's own models, which need no key: the built-in
// demo (a recorded Claude session on the demo app, through the real
// Anthropic adapter) and scripted tasks, on real Chromium displays; the
// operator's browser is the headless Chromium of panel_test.go. Each state
// the operator meets is saved as a screenshot in the test's artifact
// directory (go test -artifacts keeps them; the paths are logged).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/web"
)

// startOfflinePanel starts a server with its default models and displays
// and an operator's tab.
func startOfflinePanel(t *testing.T) *panelEnv {
	t.Helper()
	integration(t)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), Token: panelToken, Logger: log,
		ApprovalTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatalf("web.New() = %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
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
	return &panelEnv{url: hs.URL, tab: operatorTab(t)}
}

// snap saves a screenshot of the operator's whole page as name.png in the
// test's artifact directory.
func (env *panelEnv) snap(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(env.tab, 10*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", name, p)
}

// approveAll approves every request as it comes until the session's turn
// ends, and returns how many it approved.
func (env *panelEnv) approveAll(t *testing.T, max int) int {
	t.Helper()
	n := 0
	for ; n <= max; n++ {
		ctx, cancel := context.WithTimeout(env.tab, 60*time.Second)
		next, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
			if (document.querySelector('#timeline li[data-type="turn_stop"]:not([data-stop="tool_use"])')) return 'end';
			const c = document.querySelector('#approval-list .approval');
			const img = c && c.querySelector('.a-shot');
			return c && img.complete && !c.querySelector('.approve').disabled ? c.dataset.approval : null;
		})()`, chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err != nil {
			t.Fatalf("wait for a request or the end of the turn: %v\n%s", err, env.diagnose(t))
		}
		if next == "end" {
			return n
		}
		env.do(t, "approve "+next, 30*time.Second,
			chromedp.Click(fmt.Sprintf(`#approval-list .approval[data-approval=%q] .approve`, next)),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`!document.querySelector('#approval-list .approval[data-approval=%q]')`, next)))
	}
	t.Fatalf("more than %d requests to approve\n%s", max, env.diagnose(t))
	return n
}

// history returns the timeline as type:detail entries.
func (env *panelEnv) history(t *testing.T) []string {
	return eval[[]string](t, env, `[...document.querySelectorAll('#timeline li')].map(e => e.dataset.type + ':' + (e.dataset.status || e.dataset.stop || ''))`)
}

// TestPanelDemo starts the built-in demo from the panel with nothing but
// the defaults: no key, no start URL to know. The demo asks before every
// action; the operator sees each request with its target marked, the
// target's own label left readable, and approves them all; the recorded
// session runs to its end.
func TestPanelDemo(t *testing.T) {
	env := startOfflinePanel(t)
	env.login(t)
	env.do(t, "open the new task form", 30*time.Second, chromedp.Click("#new-task-link"), chromedp.WaitVisible("#nt-task"))
	type form struct {
		Kind, Task, URL, Supervise string
		URLReadOnly, ScriptShown   bool
		ProviderShown              bool
	}
	f := eval[form](t, env, `({
		Kind: document.querySelector('#new-task-form input[name=kind]:checked').value,
		Task: document.getElementById('nt-task').value, URL: document.getElementById('nt-url').value,
		Supervise: document.getElementById('nt-supervise').value, URLReadOnly: document.getElementById('nt-url').readOnly,
		ScriptShown: !document.getElementById('nt-script-row').hidden, ProviderShown: !document.getElementById('nt-provider-row').hidden,
	})`)
	want := form{Kind: "demo", Task: f.Task, URL: "demo:/", Supervise: "all", URLReadOnly: true}
	if f != want || !strings.Contains(f.Task, "Ada Lovelace") {
		t.Errorf("new task form = %+v, want the demo ready to start: %+v with the demo's task", f, want)
	}
	env.snap(t, "panel-1-new-task-demo")

	env.do(t, "start the demo", 30*time.Second,
		chromedp.Click(`#new-task-form button[type="submit"]`), chromedp.WaitVisible("#session-view"))
	m := env.waitMarker(t)
	// The demo's first action clicks the passenger name field, at (227,
	// 141) of the 1280x800 screenshot.
	if m.W != 1280 || m.H != 800 || m.X < 220 || m.X > 234 || m.Y < 134 || m.Y > 148 {
		t.Errorf("first request's marker at (%.1f, %.1f) of %vx%v, want the name field at (227, 141) of 1280x800", m.X, m.Y, m.W, m.H)
	}
	env.snap(t, "panel-2-demo-first-request")
	env.checkReadable(t)

	n := env.approveAll(t, 20)
	env.snap(t, "panel-3-demo-finished")
	hist := env.history(t)
	if !slices.Contains(hist, "turn_stop:end_turn") || slices.Contains(hist, "turn_stop:error") {
		t.Errorf("history %q, want the demo to end its turn", hist)
	}
	if n < 6 {
		t.Errorf("approved %d requests, want one per action of the demo (at least 6)", n)
	}
	if bad := eval[[]string](t, env, `[...document.querySelectorAll('#timeline li.is-error')].map(e => e.innerText)`); len(bad) > 0 {
		t.Errorf("the demo's history has errors: %q", bad)
	}
	if text := eval[string](t, env, `document.getElementById('timeline').innerText`); !strings.Contains(text, "All four stages are done") {
		t.Errorf("history does not show the recorded model's last words:\n%s", text)
	}
}

// readable is where the first request's marker and its label are, and
// what the close-up shows.
type readable struct {
	CX, CY       float64 // marker centre, page px
	Ring         float64 // marker radius, page px
	LX, LY, LW   float64 // label box
	LH           float64
	Label        string
	ZoomShown    bool
	ZoomBG       string
	ZoomOff      float64 // how far from the close-up's middle the point is shown, px
	WrapX, WrapY float64
}

// checkReadable checks that the first request's marker leaves its target
// readable: the pixels around the point look the same with the marker as
// without it, its label sits outside the ring and names the target, and a
// close-up of the target is shown.
func (env *panelEnv) checkReadable(t *testing.T) {
	t.Helper()
	const card = `#approval-list .approval`
	r := eval[readable](t, env, `(() => {
		const c = document.querySelector('`+card+`');
		const mk = c.querySelector('.a-marker').getBoundingClientRect(), lb = c.querySelector('.marker-label').getBoundingClientRect();
		const w = c.querySelector('.a-shot-wrap').getBoundingClientRect();
		return {CX: mk.left + mk.width / 2, CY: mk.top + mk.height / 2, Ring: mk.width / 2,
			LX: lb.left, LY: lb.top, LW: lb.width, LH: lb.height, Label: c.querySelector('.marker-label').textContent,
			ZoomShown: !c.querySelector('.a-zoom').hidden && c.querySelector('.a-zoom-view').getBoundingClientRect().height > 0,
			ZoomBG: c.querySelector('.a-zoom-img').style.backgroundImage,
			ZoomOff: (() => {
				const img = c.querySelector('.a-shot'), v = c.querySelector('.a-zoom-view').getBoundingClientRect();
				const z = c.querySelector('.a-zoom-img').getBoundingClientRect();
				// The marker's point in image px, shown at twice its size.
				const px = (mk.left + mk.width / 2 - img.getBoundingClientRect().left) * img.naturalWidth / img.getBoundingClientRect().width;
				const py = (mk.top + mk.height / 2 - img.getBoundingClientRect().top) * img.naturalHeight / img.getBoundingClientRect().height;
				return Math.hypot(z.left + 2 * px - (v.left + v.width / 2), z.top + 2 * py - (v.top + v.height / 2));
			})(),
			WrapX: w.left, WrapY: w.top};
	})()`)
	if r.Label == "" || r.LW <= 0 || r.LH <= 0 {
		t.Errorf("marker label %q is %vx%v, want the target named beside the marker", r.Label, r.LW, r.LH)
	}
	// The label box stays clear of the ring and of what it rings.
	nx := max(r.LX, min(r.CX, r.LX+r.LW))
	ny := max(r.LY, min(r.CY, r.LY+r.LH))
	if d := (nx-r.CX)*(nx-r.CX) + (ny-r.CY)*(ny-r.CY); d < r.Ring*r.Ring {
		t.Errorf("marker label box (%.0f,%.0f %.0fx%.0f) reaches %.1f px from the point, inside the %.0f px ring", r.LX, r.LY, r.LW, r.LH, d, r.Ring)
	}
	if r.LY < r.CY+5 && r.LY+r.LH > r.CY-5 {
		t.Errorf("marker label box (%.0f..%.0f) lies on the point's line (%.0f): it would cover the target's label", r.LY, r.LY+r.LH, r.CY)
	}
	if !r.ZoomShown || !strings.Contains(r.ZoomBG, "url(") || r.ZoomOff > 4 {
		t.Errorf("close-up shown %v with background %q, the point %.1f px off its middle; want a close-up centred on the target",
			r.ZoomShown, r.ZoomBG, r.ZoomOff)
	}
	shot := func(hidden bool) image.Image {
		t.Helper()
		ctx, cancel := context.WithTimeout(env.tab, 10*time.Second)
		defer cancel()
		vis := "visible"
		if hidden {
			vis = "hidden"
		}
		b, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('`+card+` .a-marker').style.visibility = '`+vis+`'`))
		if err != nil {
			t.Fatal(err)
		}
		_ = b
		png1, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(card+` .a-shot-wrap`)))
		if err != nil {
			t.Fatalf("screenshot of the request's screenshot: %v", err)
		}
		img, err := png.Decode(bytes.NewReader(png1))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	with, without := shot(false), shot(true)
	shot(false)
	// Nothing of the marker is drawn within 12 px of the point, nor on the
	// rows of the point (a line of text through it, 60 px either way);
	// around them, it is.
	cx, cy := int(r.CX-r.WrapX), int(r.CY-r.WrapY)
	b := with.Bounds()
	covered, drawn := 0, 0
	for y := cy - 40; y <= cy+40; y++ {
		for x := cx - 60; x <= cx+60; x++ {
			if !image.Pt(x, y).In(b) || with.At(x, y) == without.At(x, y) {
				continue
			}
			if (x-cx)*(x-cx)+(y-cy)*(y-cy) <= 12*12 || (y-cy <= 5 && cy-y <= 5) {
				covered++
			} else {
				drawn++
			}
		}
	}
	if covered > 0 {
		t.Errorf("the marker paints %d pixels on the point or its line of text: it covers the target's label", covered)
	}
	if drawn == 0 {
		t.Errorf("the marker draws nothing around the point: no marker to see")
	}
}

// TestPanelScriptAndOperatorInput starts a scripted task from the panel on
// the demo app; while its first click waits, the operator takes over, clicks
// the name field, types a name and presses Enter on the live view: each
// input appears in the history as the operator's. Then the operator hands
// back and approves the script to its end.
func TestPanelScriptAndOperatorInput(t *testing.T) {
	env := startOfflinePanel(t)
	env.login(t)
	env.do(t, "choose a scripted task", 30*time.Second,
		chromedp.Click("#new-task-link"), chromedp.WaitVisible("#nt-task"),
		chromedp.Click(`#new-task-form input[name="kind"][value="script"]`), chromedp.WaitVisible("#nt-script"))
	var turns []map[string]any
	if err := json.Unmarshal([]byte(eval[string](t, env, `document.getElementById('nt-script').value`)), &turns); err != nil || len(turns) < 2 {
		t.Fatalf("the script box holds %d turns (%v), want an example to start from", len(turns), err)
	}
	if u := eval[string](t, env, `document.getElementById('nt-url').value`); u != "demo:/" {
		t.Errorf("a script's start URL = %q, want the demo app to start with", u)
	}
	env.snap(t, "panel-4-new-task-script")
	env.do(t, "start the script", 30*time.Second,
		chromedp.Click(`#new-task-form button[type="submit"]`), chromedp.WaitVisible("#session-view"))
	env.waitMarker(t)

	env.do(t, "take over", 30*time.Second, chromedp.WaitVisible("#live-img"), chromedp.Click("#takeover"),
		chromedp.WaitVisible("#handback"))
	// The name field, at (227, 141) of the live screenshot.
	env.do(t, "click the name field, type a name, press Enter", 60*time.Second,
		chromedp.SetValue("#tk-x", "227"), chromedp.SetValue("#tk-y", "141"),
		chromedp.Click(`#click-form button[type="submit"]`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline li[data-type="operator_input"]').length === 1`),
		chromedp.SendKeys("#tk-text", "Grace Hopper"),
		chromedp.Click(`#type-form button[type="submit"]`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline li[data-type="operator_input"]').length === 2`),
		chromedp.Click("#tk-enter"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#timeline li[data-type="operator_input"]').length === 3`),
	)
	env.snap(t, "panel-5-takeover-operator-input")
	ops := eval[[]string](t, env, `[...document.querySelectorAll('#timeline li[data-type="operator_input"]')].map(e => e.querySelector('.ev-kind').textContent + ': ' + e.querySelector('.ev-body').textContent)`)
	wantOps := []string{"Operator: click at (227, 141)", `Operator: type "Grace Hopper"`, "Operator: keypress Enter"}
	if !slices.Equal(ops, wantOps) {
		t.Errorf("the operator's inputs in the history = %q, want %q", ops, wantOps)
	}
	env.do(t, "hand back", 30*time.Second, chromedp.Click("#handback"), chromedp.WaitVisible("#takeover"))
	env.approveAll(t, 10)
	if hist := env.history(t); !slices.Contains(hist, "turn_stop:end_turn") {
		t.Errorf("history %q, want the script to end its turn", hist)
	}
	env.snap(t, "panel-6-script-finished")
}

// TestPanelMessageBox shows "Message to the model" on agent sessions only:
// an executor session's model is its client's, and an MCP session is driven
// by its client, so the panel says so instead of offering a box whose
// message would be refused.
func TestPanelMessageBox(t *testing.T) {
	env := startOfflinePanel(t)
	post := func(path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env.url+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+panelToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %s %s", path, resp.Status, out)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	exec := post("/executor/sessions", map[string]any{"provider": "anthropic", "start_url": "about:blank"})["id"].(string)

	client := sdk.NewClient(&sdk.Implementation{Name: "panel-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: env.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerToken(panelToken)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}}); err != nil || res.IsError {
		t.Fatalf("MCP screenshot = %v, %v", res, err)
	}

	agent := env.createScript(t)
	env.login(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, env.url+"/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+panelToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Sessions []struct{ ID, Kind string }
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	mcp := ""
	for _, s := range list.Sessions {
		if s.Kind == "mcp" {
			mcp = s.ID
		}
	}
	if mcp == "" {
		t.Fatalf("sessions %+v: want one of kind mcp", list.Sessions)
	}
	for _, tt := range []struct {
		kind, id, say string
		box           bool
	}{
		{"agent", agent, "", true},
		{"executor", exec, "executor API", false},
		{"mcp", mcp, "MCP client", false},
	} {
		env.do(t, "open the "+tt.kind+" session", 30*time.Second,
			chromedp.Navigate(env.url+"/#/session/"+tt.id), chromedp.WaitVisible("#session-view"),
			chromedp.Poll[chromedp.Void](`document.getElementById('session-status').textContent !== ''`))
		type box struct {
			Form, Note bool
			Text       string
		}
		got := eval[box](t, env, `({Form: !document.getElementById('msg-form').hidden, Note: !document.getElementById('msg-none').hidden,
			Text: document.getElementById('msg-none').textContent})`)
		if got.Form != tt.box || got.Note == tt.box || !strings.Contains(got.Text, tt.say) {
			t.Errorf("%s session: message box shown %v, note shown %v (%q); want box %v, else a note saying %q",
				tt.kind, got.Form, got.Note, got.Text, tt.box, tt.say)
		}
		env.snap(t, "panel-7-message-box-"+tt.kind)
	}
}

// bearerToken adds a bearer token to every request.
type bearerToken string

func (b bearerToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// createScript creates, over the API, an agent session whose script only
// says it is done, and returns its id.
func (env *panelEnv) createScript(t *testing.T) string {
	t.Helper()
	body := `{"title": "a scripted session", "messages": [{"role": "user", "content": "say done"}],
		"model": {"provider": "script", "turns": [{"say": "done"}]}, "start_url": "about:blank"}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, env.url+"/session", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+panelToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // the stream ends with the turn
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Session-Id") == "" {
		t.Fatalf("PUT /session: %s %s", resp.Status, b)
	}
	return resp.Header.Get("X-Session-Id")
}
