package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A session may ask only for the display backends the operator enabled
// (Config.Displays; chromium by default), and a vnc display's password
// only from a SPOTTER_VNC_* variable; a bad display spec is refused in
// words before anything starts.
func TestSessionDisplays(t *testing.T) {
	put := func(e *env, display map[string]any) (int, string) {
		t.Helper()
		resp := e.request("PUT", "/session", map[string]any{"model": map[string]any{"provider": "anthropic"}, "display": display})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	def := newEnv(t, envOpts{fake: true})
	for _, tt := range []struct {
		name    string
		display map[string]any
		want    string
	}{
		{"desktop not enabled", map[string]any{"backend": "desktop"}, "not enabled on this server"},
		{"unknown backend", map[string]any{"backend": "x11"}, `display.backend \"x11\": want one of`},
		{"vnc without address", map[string]any{"backend": "vnc"}, "display.address is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := put(def, tt.display)
			if code != http.StatusBadRequest || !strings.Contains(body, tt.want) {
				t.Errorf("PUT /session display %v = %d %s, want 400 saying %q", tt.display, code, body, tt.want)
			}
		})
	}

	e := newEnv(t, envOpts{fake: true, displays: []string{"chromium", "desktop", "vnc"}})
	if code, body := put(e, map[string]any{"backend": "desktop", "command": []string{"xterm"}}); code != http.StatusOK {
		t.Errorf("PUT /session desktop on a server that enables it = %d %s, want 200", code, body)
	}
	resp := e.request("PUT", "/session", map[string]any{"model": map[string]any{"provider": "anthropic"},
		"display": map[string]any{"backend": "desktop"}, "start_url": "https://example.com/"})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "no browser to open it") {
		t.Errorf("PUT /session desktop with a start_url = %d %s, want 400 saying it has no browser", resp.StatusCode, b)
	}
	code, body := put(e, map[string]any{"backend": "vnc", "address": "127.0.0.1:5900", "password_env": "ANTHROPIC_API_KEY"})
	if code != http.StatusBadRequest || !strings.Contains(body, "SPOTTER_VNC_") {
		t.Errorf("PUT /session vnc with password_env ANTHROPIC_API_KEY = %d %s, want 400 naming SPOTTER_VNC_", code, body)
	}
}

// A vnc display whose server does not answer is the client's to fix: 400,
// in words that name no file of the server.
func TestSessionDisplayUnreachable(t *testing.T) {
	e := newEnv(t, envOpts{fake: true, displays: []string{"vnc"}})
	e.stop()
	e.cfg.NewDisplay = nil // the real wiring, to a server that is not there
	e.start()
	resp := e.request("PUT", "/session", map[string]any{"model": map[string]any{"provider": "anthropic"},
		"display": map[string]any{"backend": "vnc", "address": "unix:/nonexistent/spotter-test.sock"}})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "did not answer") || strings.Contains(string(b), "/nonexistent") {
		t.Errorf("PUT /session vnc to nowhere = %d %s, want 400 saying it did not answer, without the path", resp.StatusCode, b)
	}
}
