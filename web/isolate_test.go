package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
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
	socket := isolatetest.Socket(t) // skips without SPOTTER_INTEGRATION=1; fails without containerd
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
	e.cfg = web.Config{DataDir: e.data, Token: testToken, Sandboxes: sbx}
	e.start()
	t.Cleanup(e.stop)

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
