package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
)

// serveChild starts `spotter serve` on loopback with args added, as
// startServe does, and returns once it listens.
func serveChild(t *testing.T, bin, data string, env []string, args ...string) *child {
	t.Helper()
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--token", testToken}, args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start spotter serve: %v", err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "spotter: listening on "); ok {
				lines <- u
			}
		}
		close(lines)
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-c.done
		}
	})
	select {
	case u, ok := <-lines:
		if !ok {
			t.Fatal("spotter serve exited before listening")
		}
		c.base = u
	case <-time.After(60 * time.Second):
		t.Fatal("spotter serve did not start listening within 60s")
	}
	return c
}

// follow reads a session's events from the start until one satisfies
// stop, and returns them all.
func follow(t *testing.T, e *env, id string, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/session/"+id+"/events?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET events: %v", err)
	}
	defer resp.Body.Close()
	r := newSSEReader(resp.Body)
	var evs []sseEvent
	for {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("events of %s ended before the awaited one (%v); got %v", id, err, kinds(evs))
		}
		evs = append(evs, ev)
		if stop(ev) {
			return evs
		}
	}
}

// until polls cond (a condition, not a page: no fixed sleep decides
// anything) until it holds or a minute passes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		}
	}
}

// putInBackground starts PUT /session and returns the session's id once
// the server has created it; the stream is read (and dropped) until the
// server dies.
func putInBackground(t *testing.T, e *env, body any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(t.Context(), "PUT", e.base+"/session", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	ids := make(chan string, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ids <- ""
			return
		}
		defer resp.Body.Close()
		ids <- resp.Header.Get("X-Session-Id")
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	id := <-ids
	if id == "" {
		t.Fatal("PUT /session: no session")
	}
	return id
}

// noPaths fails if what a client reads holds the server's data directory.
func noPaths(t *testing.T, e *env, id, data string) {
	t.Helper()
	for _, path := range []string{"/session/" + id, "/sessions"} {
		resp := e.request("GET", path, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), data) {
			t.Errorf("GET %s names the data directory: %.300s", path, b)
		}
	}
}

// A turn cut by kill -9 at any stage resumes when `spotter serve` starts
// again on the same data: in the model's first call, in the middle of a
// display call, and (an executor session) during a takeover, with calls
// answered before. TestCrashRestart covers a turn killed with an approval
// pending.
func TestCrashEachStage(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the crash tests (real Chromium, the built binary, kill -9)")
	}
	bin := buildSpotter(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, shopPage)
	}))
	defer page.Close()
	// Each case has a fake model endpoint of its own.
	serve := func(t *testing.T, data string, model *anthropictest.Server) *child {
		return serveChild(t, bin, data, []string{"ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=test"}, "--isolate", "none")
	}
	agent := func(task string) map[string]any {
		return map[string]any{"messages": []map[string]any{{"role": "user", "content": task}},
			"model": map[string]any{"provider": "anthropic", "name": modelName}, "display": map[string]any{"width": 1024, "height": 640},
			"start_url": page.URL, "approvals": map[string]any{"supervise": "none"}}
	}
	endTurn := func(ev sseEvent) bool { return ev.Type == "turn_stop" && ev.field("stopReason") != "tool_use" }

	t.Run("in the model's first call", func(t *testing.T) {
		data, model := t.TempDir(), anthropictest.NewServer(t)
		c := serve(t, data, model)
		e := &env{t: t, base: c.base}
		model.Add(anthropictest.Reply{Delay: 10 * time.Minute}, // never answered: the server dies first
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Bought after the restart.")}})
		id := putInBackground(t, e, agent("Buy the thing"))
		until(t, "the model's first call", func() bool { return len(model.Requests()) == 1 })
		c.kill(t)

		c = serve(t, data, model)
		e.base = c.base
		evs := follow(t, e, id, endTurn)
		if last := evs[len(evs)-1]; last.field("stopReason") != "end_turn" {
			t.Fatalf("turn_stop after the restart = %s, want end_turn", last.Data)
		}
		var h session.History
		e.getJSON("/session/"+id, &h)
		if h.Session.Status != "idle" || h.Session.Error != "" {
			t.Errorf("session after the restart = %s %q, want idle without error", h.Session.Status, h.Session.Error)
		}
		reqs := model.Requests()
		if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Buy the thing") {
			t.Errorf("model requests = %d, want 2, the second with the task", len(reqs))
		}
		for _, d := range []string{"t1", "t2"} {
			if _, err := os.Stat(filepath.Join(data, "sessions", id, d, "events.jsonl")); err != nil {
				t.Errorf("trace %s: %v (each run writes its own)", d, err)
			}
		}
		noPaths(t, e, id, data)
	})

	t.Run("in the middle of a call", func(t *testing.T) {
		data, model := t.TempDir(), anthropictest.NewServer(t)
		c := serve(t, data, model)
		e := &env{t: t, base: c.base}
		model.Add(anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Waiting for the page."),
			anthropictest.ToolUse("toolu_w", "computer", map[string]any{"action": "wait", "duration": 3})}},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done waiting.")}})
		id := putInBackground(t, e, agent("Wait for the page"))
		follow(t, e, id, func(ev sseEvent) bool { return ev.Type == "tool_call" }) // the wait runs for 3 s
		c.kill(t)
		if len(model.Requests()) != 1 {
			t.Fatalf("the call ended before the kill (model requests %d)", len(model.Requests()))
		}

		c = serve(t, data, model)
		e.base = c.base
		evs := follow(t, e, id, endTurn)
		if last := evs[len(evs)-1]; last.field("stopReason") != "end_turn" {
			t.Fatalf("turn_stop after the restart = %s, want end_turn", last.Data)
		}
		results := 0
		for _, ev := range evs {
			if ev.Type == "tool_result" && ev.field("toolCallId") == "toolu_w" {
				results++
			}
		}
		if results != 1 {
			t.Errorf("tool_result toolu_w events = %d, want 1 (%v)", results, kinds(evs))
		}
		reqs := model.Requests()
		if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `"tool_use_id":"toolu_w"`) {
			t.Errorf("model requests = %d, want 2, the second answering toolu_w", len(reqs))
		}
		noPaths(t, e, id, data)
	})

	t.Run("an executor session during a takeover", func(t *testing.T) {
		data, model := t.TempDir(), anthropictest.NewServer(t)
		c := serve(t, data, model)
		e := &env{t: t, base: c.base}
		var ex struct{ ID string }
		postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL,
			"display": map[string]any{"width": 1024, "height": 640}}, http.StatusOK, &ex)
		shot := func(id string) json.RawMessage {
			return anthropictest.ToolUse(id, "computer", map[string]any{"action": "screenshot"})
		}
		var before struct{ Frame struct{ ID string } }
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", shot("c1"), http.StatusOK, nil)
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", shot("c2"), http.StatusOK, &before)
		postJSON(t, e, "/session/"+ex.ID+"/takeover", map[string]any{"active": true}, http.StatusOK, nil)
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=0s", shot("held"), http.StatusAccepted, nil)
		follow(t, e, ex.ID, func(ev sseEvent) bool { return ev.Type == "tool_call" && ev.field("toolCallId") == "held" })
		c.kill(t)

		c = serve(t, data, model)
		e.base = c.base
		var after struct{ Frame struct{ ID string } }
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", shot("c2"), http.StatusOK, &after)
		if after.Frame.ID != before.Frame.ID {
			t.Errorf("retry of c2 after the restart: frame %q, want its result from before (%q)", after.Frame.ID, before.Frame.ID)
		}
		// The takeover holds: the operator acts at once, and the call
		// waits for the hand-back.
		postJSON(t, e, "/session/"+ex.ID+"/input", map[string]any{"kind": "click", "at": map[string]any{"x": 350, "y": 190},
			"has_at": true}, http.StatusOK, nil)
		resp := e.request("GET", "/executor/sessions/"+ex.ID+"/calls/held?wait=0s", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("GET held before the hand-back = %d, want 202", resp.StatusCode)
		}
		postJSON(t, e, "/session/"+ex.ID+"/takeover", map[string]any{"active": false}, http.StatusOK, nil)
		resp = e.request("GET", "/executor/sessions/"+ex.ID+"/calls/held?wait=60s", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), session.HumanActed) ||
			!strings.Contains(string(b), "The server restarted") {
			t.Fatalf("GET held after the hand-back = %d %.400s; want the result, saying a human acted and the server restarted",
				resp.StatusCode, b)
		}
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", shot("c3"), http.StatusOK, nil)
		noPaths(t, e, ex.ID, data)
		resp = e.request("DELETE", "/executor/sessions/"+ex.ID, nil)
		resp.Body.Close()
	})
}
