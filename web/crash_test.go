package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
)

const shopPage = `<!doctype html><html><head><title>Shop</title><style>
body{margin:0;font:20px sans-serif} button{position:absolute;left:250px;top:150px;width:200px;height:80px;font-size:24px}
</style></head><body><h1>Shop</h1><button id=buy onclick="document.title='bought';this.textContent='Thanks'">Buy now</button></body></html>`

// child is a `spotter serve` process.
type child struct {
	cmd  *exec.Cmd
	base string
	done chan struct{} // closed when the process has exited
	err  error
}

func buildSpotter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "spotter")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-ldflags=-s -w", "-o", bin, "github.com/spotter-harness/spotter/cmd/spotter")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build spotter: %v", err)
	}
	return bin
}

func startServe(t *testing.T, bin, data string, env []string) *child {
	t.Helper()
	// --isolate local: a kill -9 must not leave containerd sandboxes
	// behind on the machine (auto would pick containerd where it runs).
	return serveChild(t, bin, data, env, "--isolate", "local")
}

// kill ends the server with SIGKILL, as a crash would.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.done
}

// A server killed with SIGKILL while an approval is pending comes back
// with the session, its history and the pending approval; once approved,
// the session completes on a relaunched browser, and its event stream has
// no gap.
func TestCrashRestart(t *testing.T) {
	t.Parallel()
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the crash test (real Chromium, the built binary)")
	}
	t0 := time.Now()
	bin := buildSpotter(t)
	t.Logf("built spotter in %v", time.Since(t0).Round(time.Millisecond))
	// The page reports the purchase: what the server says of the click
	// is checked on the page's side.
	var bought atomic.Int32
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bought" {
			bought.Add(1)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, strings.Replace(shopPage, `onclick="`, `onclick="fetch('/bought');`, 1))
	}))
	defer page.Close()
	model := anthropictest.NewServer(t,
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I will press Buy now."), click(t, "toolu_1", 350, 190)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("The purchase is done.")}},
	)
	envv := []string{"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=test"}
	data := t.TempDir()

	c := startServe(t, bin, data, envv)
	e := &env{t: t, base: c.base}
	resp, evs := e.stream("PUT", "/session", map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": "Buy the thing"}},
		"model":     map[string]any{"provider": "anthropic", "name": modelName},
		"display":   map[string]any{"width": 1024, "height": 640},
		"start_url": page.URL,
	})
	id := resp.Header.Get("X-Session-Id")
	want := []string{"session", "text_delta", "tool_call:toolu_1", "permission_request:toolu_1", "turn_stop:tool_use"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("first stream (-want +got):\n%s", diff)
	}
	var pr session.PermissionRequest
	_ = json.Unmarshal(evs[3].Data, &pr)
	if pr.Rule != "purchase" || !strings.Contains(fmt.Sprint(pr.Target), "Buy now") {
		t.Errorf("permission_request rule %q target %v, want the purchase rule on the Buy now button", pr.Rule, pr.Target)
	}

	t.Logf("pending approval after %v", time.Since(t0).Round(time.Millisecond))
	c.kill(t)
	c = startServe(t, bin, data, envv)
	e.base = c.base
	t.Logf("restarted after %v", time.Since(t0).Round(time.Millisecond))

	var list struct{ Sessions []struct{ ID, Status string } }
	e.getJSON("/sessions", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != id || list.Sessions[0].Status != "waiting" {
		t.Fatalf("sessions after restart = %+v, want %s waiting", list.Sessions, id)
	}
	var pend struct{ Approvals []struct{ ID, Status string } }
	e.getJSON("/approvals?status=pending", &pend)
	if len(pend.Approvals) != 1 || pend.Approvals[0].ID != pr.ApprovalID {
		t.Fatalf("pending approvals after restart = %+v, want %s", pend.Approvals, pr.ApprovalID)
	}
	var h session.History
	e.getJSON("/session/"+id, &h)
	if got := unresolved(h); !cmp.Equal(got, []string{"toolu_1"}) {
		t.Errorf("unresolved after restart = %v, want [toolu_1]", got)
	}

	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool_permission", "toolCallId": "toolu_1", "granted": true}}})
	want = []string{"approval_decided:toolu_1", "tool_result:toolu_1", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("stream after restart (-want +got):\n%s", diff)
	}
	t.Logf("session completed after %v", time.Since(t0).Round(time.Millisecond))
	all := checkSeq(t, e, id)
	wantAll := []string{"session", "text_delta", "tool_call:toolu_1", "permission_request:toolu_1", "turn_stop:tool_use",
		"approval_decided:toolu_1", "tool_result:toolu_1", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(wantAll, kinds(all)); diff != "" {
		t.Errorf("whole stream (-want +got):\n%s", diff)
	}
	e.getJSON("/session/"+id, &h)
	var roles []string
	for _, m := range h.Messages {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"user", "assistant", "tool", "assistant"}, roles); diff != "" {
		t.Errorf("history roles (-want +got):\n%s", diff)
	}
	// The click ran on the relaunched browser, at the page it was on.
	var res session.ToolResultEvent
	_ = json.Unmarshal(all[6].Data, &res)
	if res.IsError {
		t.Errorf("tool_result after restart = %s, want success", all[6].Data)
	}
	if n := bought.Load(); n != 1 {
		t.Errorf("the page saw %d purchases, want the approved click's one", n)
	}
	reqs := model.Requests()
	if n := len(reqs); n != 2 {
		t.Errorf("model requests = %d, want 2 (one per turn, none repeated)", n)
	}
}

// The first click after a restart lands on the relaunched page: a browser
// that has not drawn the page since it loaded dropped it, and the call
// still answered that it ran.
func TestClickAfterRestart(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the crash tests (real Chromium, the built binary, kill -9)")
	}
	bin := buildSpotter(t)
	page, data := newKillPage(t), t.TempDir()
	c := serveChild(t, bin, data, nil, "--isolate", "none")
	e := &env{t: t, base: c.base}
	var ex struct{ ID string }
	postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL,
		"display": map[string]any{"width": 1024, "height": 640}, "approvals": map[string]any{"supervise": "none"}}, http.StatusOK, &ex)
	c.kill(t)
	c = serveChild(t, bin, data, nil, "--isolate", "none")
	e.base = c.base
	var a execAnswer
	postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", anthropictest.ToolUse("go", "computer",
		map[string]any{"action": "left_click", "coordinate": []int{350, 190}}), http.StatusOK, &a)
	if n := page.clicks.Load(); a.Error != "" || n != 1 {
		t.Errorf("the first click after the restart = error %q, and the page saw %d clicks; want it to land once", a.Error, n)
	}
}
