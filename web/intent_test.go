package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/store/pgtest"
)

// killPage serves tagPage, whose button reports each click; the first
// click kills the process kill names (SIGKILL), while its server waits for
// the page to settle after the click: between performing the click and
// storing its result.
type killPage struct {
	*httptest.Server
	clicks atomic.Int32
	mu     sync.Mutex
	hits   []string      // the paths asked for, in order
	kill   func()        // the first click's victim
	killed chan struct{} // closed once it is dead
}

func newKillPage(t *testing.T) *killPage {
	p := &killPage{killed: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hits = append(p.hits, r.URL.Path)
		p.mu.Unlock()
		if r.URL.Path != "/clicked" {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, tagPage)
			return
		}
		p.clicks.Add(1)
		p.mu.Lock()
		kill := p.kill
		p.kill = nil
		p.mu.Unlock()
		if kill != nil {
			kill()
			close(p.killed)
		}
	}))
	t.Cleanup(func() {
		p.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Logf("the page was asked for %q", p.hits)
	})
	return p
}

// victim makes the next click kill with kill.
func (p *killPage) victim(kill func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kill = kill
}

// unknownResult reports whether a tool result's text says the call's
// outcome is unknown.
func unknownResult(text string) bool {
	return strings.Contains(text, harness.ErrOutcomeUnknown.Error())
}

// toldUnknown checks that a request to the model answered call id with
// its outcome unknown and a fresh screenshot: the image, or (the context
// policy's) words saying it is identical to the last one the model has.
func toldUnknown(t *testing.T, body json.RawMessage, id string) {
	t.Helper()
	rs, err := anthropictest.ToolResults(body)
	if err != nil || len(rs) != 1 || rs[0].ToolUseID != id || !rs[0].IsError || !unknownResult(rs[0].Text) ||
		len(rs[0].Images) != 1 && !strings.Contains(rs[0].Text, ctxpolicy.Unchanged) {
		t.Errorf("the model was sent %+v, %v; want %s answered with its outcome unknown and a screenshot", rs, err, id)
	}
}

// A call whose server is killed with SIGKILL between performing its
// click and storing its result is not performed again when spotter serve
// starts again on the same data: the click ran once, and the call is
// answered with its outcome unknown and a fresh screenshot, to the model
// of an agent session and to the client of an executor session retrying
// its call.
func TestKillBetweenPerformAndStore(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the crash tests (real Chromium, the built binary, kill -9)")
	}
	bin := buildSpotter(t)
	click := func(id string) json.RawMessage {
		return anthropictest.ToolUse(id, "computer", map[string]any{"action": "left_click", "coordinate": []int{350, 190}})
	}

	t.Run("agent", func(t *testing.T) {
		page, data, model := newKillPage(t), t.TempDir(), anthropictest.NewServer(t)
		penv := []string{"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=test"}
		c := serveChild(t, bin, data, penv, "--isolate", "none")
		page.victim(func() { c.cmd.Process.Kill() })
		model.Add(anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Pressing Go."), click("toolu_buy")}},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I will look before pressing again.")}})
		e := &env{t: t, base: c.base}
		id := putInBackground(t, e, spec("Press Go once.", map[string]any{"start_url": page.URL,
			"approvals": map[string]any{"supervise": "none"}}))
		<-page.killed
		<-c.done

		c = serveChild(t, bin, data, penv, "--isolate", "none")
		e.base = c.base
		evs := follow(t, e, id, func(ev sseEvent) bool { return ev.Type == "turn_stop" && ev.field("stopReason") != "tool_use" })
		if n := page.clicks.Load(); n != 1 {
			t.Errorf("the button was clicked %d times, want once: the call ran again after the restart", n)
		}
		results := 0
		for _, ev := range evs {
			if ev.Type == "tool_result" && ev.field("toolCallId") == "toolu_buy" {
				results++
				if !unknownResult(string(ev.Data)) || !strings.Contains(string(ev.Data), `"image"`) {
					t.Errorf("the result of toolu_buy after the restart = %s, want its outcome unknown, with a screenshot", ev.Data)
				}
			}
		}
		reqs := model.Requests()
		if results != 1 || len(reqs) != 2 {
			t.Fatalf("%d results of toolu_buy, %d model requests; want one result, and the model asked again", results, len(reqs))
		}
		toldUnknown(t, reqs[1].Body, "toolu_buy")
	})

	t.Run("executor", func(t *testing.T) {
		page, data := newKillPage(t), t.TempDir()
		c := serveChild(t, bin, data, nil, "--isolate", "none")
		e := &env{t: t, base: c.base}
		var ex struct{ ID string }
		postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL,
			"display": map[string]any{"width": 1024, "height": 640}}, http.StatusOK, &ex)
		page.victim(func() { c.cmd.Process.Kill() })
		go func() { // cut off by the kill
			resp, err := http.DefaultClient.Do(mustRequest(t, "POST", c.base+"/executor/sessions/"+ex.ID+"/call?wait=60s", click("buy")))
			if err == nil {
				resp.Body.Close()
			}
		}()
		<-page.killed
		<-c.done

		c = serveChild(t, bin, data, nil, "--isolate", "none")
		e.base = c.base
		var a execAnswer
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", click("buy"), http.StatusOK, &a)
		if !unknownResult(a.text()) || !strings.Contains(string(a.Result), `"image"`) {
			t.Errorf("the client's retry of buy after the restart = %s, want its outcome unknown, with a screenshot", a.Result)
		}
		// The next call runs.
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", click("again"), http.StatusOK, &a)
		if n := page.clicks.Load(); n != 2 {
			t.Errorf("the button was clicked %d times after buy and again, want twice: buy once", n)
		}
	})
}

// mustRequest is an authenticated JSON request.
func mustRequest(t *testing.T, method, url string, body json.RawMessage) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Across adoption: the replica that runs an agent session is killed with
// SIGKILL between performing its click and storing the result; the
// replica that adopts the session does not click again, and the model is
// told the outcome is unknown.
func TestKillBetweenPerformAndStoreAdopted(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the replicas (the built binary, real Chromium, PostgreSQL)")
	}
	dsn := pgtest.NewDB(t, pgtest.Start(t))
	bin := buildSpotter(t)
	page, data, model := newKillPage(t), t.TempDir(), anthropictest.NewServer(t)
	penv := []string{"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=test"}
	reps := map[string]*replica{}
	for _, id := range []string{"r1", "r2"} {
		reps[id] = startReplica(t, bin, id, data, dsn, penv)
		waitReady(t, reps[id])
	}
	cl := &client{t: t, reps: []*replica{reps["r1"], reps["r2"]}}
	// A session without messages waits for one: its owner is known
	// before its turn clicks.
	resp, body := cl.call("PUT", "/session", map[string]any{"model": map[string]any{"provider": "anthropic", "name": modelName},
		"display": map[string]any{"width": 1024, "height": 640}, "start_url": page.URL,
		"approvals": map[string]any{"supervise": "none"}}, 30*time.Second)
	id, owner := resp.Header.Get("X-Session-Id"), reps[resp.Header.Get("X-Spotter-Replica")]
	if resp.StatusCode != http.StatusOK || owner == nil {
		t.Fatalf("PUT /session = %d %s, owner %q", resp.StatusCode, body, resp.Header.Get("X-Spotter-Replica"))
	}
	page.victim(func() { owner.cmd.Process.Kill() })
	model.Add(anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Pressing Go."),
		anthropictest.ToolUse("toolu_buy", "computer", map[string]any{"action": "left_click", "coordinate": []int{350, 190}})}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I will look before pressing again.")}})
	go func() { // its stream ends with the owner
		resp, err := http.DefaultClient.Do(mustRequest(t, "POST", owner.base+"/session/"+id,
			json.RawMessage(`{"messages":[{"role":"user","content":"Press Go once."}]}`)))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-page.killed
	<-owner.done
	killed := time.Now()
	cl.drop(owner)
	_, by := cl.waitFor(id, 90*time.Second, func(h clusterHistory) bool { return h.Session.Status == "idle" })
	t.Logf("adopted by %s; its turn ended %v after the kill", by, time.Since(killed).Round(time.Millisecond))
	if by == owner.id {
		t.Errorf("session answered by %s, the killed replica", by)
	}
	if n := page.clicks.Load(); n != 1 {
		t.Errorf("the button was clicked %d times, want once: the adopter ran the call again", n)
	}
	results := 0
	for _, ev := range cl.events(id) {
		if ev.Type == "tool_result" && ev.field("toolCallId") == "toolu_buy" {
			results++
			if !unknownResult(string(ev.Data)) {
				t.Errorf("the result of toolu_buy on the adopter = %s, want its outcome unknown", ev.Data)
			}
		}
	}
	reqs := model.Requests()
	if results != 1 || len(reqs) != 2 {
		t.Fatalf("%d results of toolu_buy, %d model requests; want one result, and the model asked again", results, len(reqs))
	}
	toldUnknown(t, reqs[1].Body, "toolu_buy")
}
