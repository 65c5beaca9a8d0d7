package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
)

// chromiumProcesses returns the Chromium processes under pid: the browser
// processes (no --type) and the renderers.
func chromiumProcesses(pid int) (browsers, renderers []int) {
	for _, p := range chromiumUnder(pid) {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		switch {
		case strings.Contains(string(cmd), "--type=renderer"):
			renderers = append(renderers, p)
		case !strings.Contains(string(cmd), "--type=") && strings.HasPrefix(args[0], "/usr/lib/chromium/"):
			browsers = append(browsers, p)
		}
	}
	return browsers, renderers
}

// An executor session outlives its browser: Chromium's renderer and the
// browser process itself, killed with SIGKILL again and again, are
// started anew at the session's page, 3 times (docs/API.md); the call
// that finds the browser dead says so and has a screenshot, and the next
// call works. A fourth death within 10 minutes ends the session, saying
// so. Deleting the session leaves no Chromium process.
func TestExecutorBrowserCrash(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the browser crash test (real Chromium, the built binary)")
	}
	bin := buildSpotter(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, shopPage)
	}))
	defer page.Close()
	c := serveChild(t, bin, t.TempDir(), nil, "--isolate", "none")
	pid := c.cmd.Process.Pid
	e := &env{t: t, base: c.base}
	var ex struct{ ID string }
	postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL,
		"display": map[string]any{"width": 1024, "height": 640}}, http.StatusOK, &ex)
	type answer struct {
		Error  string
		Frame  struct{ ID, URL string }
		Result struct {
			Content []struct{ Type, Text string }
		}
	}
	text := func(a answer) string {
		var b strings.Builder
		for _, c := range a.Result.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	kill := func(i int) string {
		browsers, renderers := chromiumProcesses(pid)
		victims, what := renderers, "renderer"
		if i%2 == 1 {
			victims, what = browsers, "browser"
		}
		if len(victims) == 0 {
			t.Fatalf("kill %d: no Chromium %s under the server (%d browsers, %d renderers)", i, what, len(browsers), len(renderers))
		}
		for _, v := range victims {
			if err := syscall.Kill(v, syscall.SIGKILL); err != nil {
				t.Fatalf("kill %s %d: %v", what, v, err)
			}
		}
		until(t, "the killed processes to be gone", func() bool {
			for _, v := range victims {
				if b, err := os.ReadFile("/proc/" + strconv.Itoa(v) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
					return false
				}
			}
			return true
		})
		return what
	}
	for i := range 3 {
		what := kill(i)
		var a answer
		call := anthropictest.ToolUse(fmt.Sprintf("k%d", i), "computer", map[string]any{"action": "screenshot"})
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", call, http.StatusOK, &a)
		if !strings.Contains(text(a), "started anew") || a.Frame.ID == "" {
			t.Errorf("the call after the %s was killed (%d) = %q, frame %q; want a note that the browser was started anew",
				what, i, text(a), a.Frame.ID)
		}
		call = anthropictest.ToolUse(fmt.Sprintf("n%d", i), "computer", map[string]any{"action": "left_click", "coordinate": []int{40, 400}})
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", call, http.StatusOK, &a)
		if a.Error != "" || a.Frame.URL != page.URL+"/" {
			t.Errorf("the next call (%d) = error %q at %q, want it to work on %s", i, a.Error, a.Frame.URL, page.URL)
		}
	}
	kill(3)
	resp := e.request("POST", "/executor/sessions/"+ex.ID+"/call?wait=60s",
		anthropictest.ToolUse("k3", "computer", map[string]any{"action": "screenshot"}))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "started anew 3 times") {
		t.Errorf("the call after a fourth death = %d %s, want 409: the session ended, saying the browser was started anew 3 times", resp.StatusCode, b)
	}
	resp = e.request("DELETE", "/executor/sessions/"+ex.ID, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE = %d", resp.StatusCode)
	}
	if n := len(chromiumUnder(pid)); n != 0 {
		t.Errorf("Chromium processes after DELETE = %d, want none", n)
	}
	var h struct{ Session struct{ Status string } }
	e.getJSON("/session/"+ex.ID, &h)
	if h.Session.Status != "stopped" {
		t.Errorf("status after DELETE = %q, want stopped", h.Session.Status)
	}
}
