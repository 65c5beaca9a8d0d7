package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/web"
)

// With containerd sandboxes (`spotter serve --isolate containerd`), every
// session's browser runs in a sandbox of its own whose egress allows the
// session's start URL: two sessions on two host pages each see their own
// page, through their own proxy, and a page no session named gets no
// request.
func TestIsolateContainerd(t *testing.T) {
	e := containerdEnv(t)

	blue, red, other := isolatetest.NewPage(t, isolatetest.Blue), isolatetest.NewPage(t, isolatetest.Red),
		isolatetest.NewPage(t, isolatetest.Green)
	for _, p := range []struct {
		page *isolatetest.Page
		want [3]uint8
	}{{blue, isolatetest.Blue}, {red, isolatetest.Red}} {
		id, got := e.execAt(p.page.URL + "/")
		if !isolatetest.Near(got, p.want) {
			t.Errorf("session on %s shows %v, want %v: the sandbox reached its start URL", p.page.URL, got, p.want)
		}
		if p.page.Hits.Load() == 0 {
			t.Errorf("%s got no request", p.page.URL)
		}
		r := e.request("DELETE", "/executor/sessions/"+id, nil)
		r.Body.Close()
	}
	if n := other.Hits.Load(); n != 0 {
		t.Errorf("a page no session named got %d requests", n)
	}
}

// containerdEnv is a server whose sessions' browsers run in containerd
// sandboxes, this test binary their agent. It skips without
// SPOTTER_INTEGRATION=1 and fails without containerd.
func containerdEnv(t *testing.T) *env {
	t.Helper()
	socket := isolatetest.Socket(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sbx, err := wiring.NewSandboxes(ctx, wiring.SandboxConfig{Backend: isolate.Containerd, Logger: isolatetest.Logger(),
		Containerd: containerd.Config{Socket: socket, Agent: os.Args[0], AgentArgs: []string{"agent"}}})
	if err != nil {
		t.Fatalf("NewSandboxes(containerd) = %v", err)
	}
	t.Cleanup(func() {
		if err := sbx.Close(context.Background()); err != nil {
			t.Errorf("closing the sandboxes: %v", err)
		}
	})
	e := &env{t: t, data: t.TempDir()}
	e.cfg = web.Config{DataDir: e.data, Token: testToken, Sandboxes: sbx, BrowserCheck: -1}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// sandboxBrowsers lists the browser processes (not renderers) of the
// containerd sandboxes whose agent is this test binary.
func sandboxBrowsers(t *testing.T) []int {
	t.Helper()
	self, err := os.Stat(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmd), "/spotter/agent\x00") {
			continue
		}
		if exe, err := os.Stat("/proc/" + ent.Name() + "/exe"); err != nil || !os.SameFile(exe, self) {
			continue // another process's sandbox
		}
		browsers, _ := chromiumProcesses(pid)
		for _, b := range browsers {
			if !slices.Contains(out, b) { // an agent's child process is one too
				out = append(out, b)
			}
		}
	}
	return out
}

// Under containerd, an executor session's browser killed twice in a row
// comes back at the session's last page each time, as docs/API.md
// promises, not at about:blank: the call after each kill says the
// browser was started anew and shows the page, and the next click works
// there.
func TestContainerdBrowserCrashTwice(t *testing.T) {
	e := containerdEnv(t)
	page := isolatetest.NewPage(t, isolatetest.Blue)
	id, got := e.execAt(page.URL + "/")
	if !isolatetest.Near(got, isolatetest.Blue) {
		t.Fatalf("the session shows %v, want its page's blue", got)
	}
	for i := range 2 {
		victims := sandboxBrowsers(t)
		if len(victims) != 1 {
			t.Fatalf("kill %d: %d browser processes in this test's sandboxes, want the session's one", i, len(victims))
		}
		if err := syscall.Kill(victims[0], syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		until(t, "the killed browser to be gone", func() bool {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(victims[0]) + "/stat")
			return err != nil || strings.Contains(string(b), ") Z ")
		})
		a := e.execCall(id, fmt.Sprintf(`{"type":"tool_use","id":"k%d","name":"computer","input":{"action":"screenshot"}}`, i))
		if a.Frame.URL != page.URL+"/" || !strings.Contains(a.text(), "started anew") {
			t.Errorf("the call after kill %d: at %q saying %q; want the session's page %s/ and a note that the browser was started anew",
				i, a.Frame.URL, a.text(), page.URL)
		}
	}
	a := e.execCall(id, `{"type":"tool_use","id":"after","name":"computer","input":{"action":"left_click","coordinate":[500,300]}}`)
	if a.Error != "" || a.Frame.URL != page.URL+"/" {
		t.Errorf("a click after the second kill = error %q at %q, want it to work on the page", a.Error, a.Frame.URL)
	}
}

func decodeJSON(t *testing.T, r *http.Response, v any) {
	t.Helper()
	defer r.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, b.String())
	}
	if err := json.Unmarshal(b.Bytes(), v); err != nil {
		t.Fatalf("%s %s: %v", r.Request.Method, r.Request.URL.Path, err)
	}
}
