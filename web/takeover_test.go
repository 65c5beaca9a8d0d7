package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
)

// An operator takes over while a call waits for approval: the approved
// call waits for the hand-back, the operator's input reaches the display
// first, and the model is told that a human acted.
func TestTakeover(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true},
		anthropictest.Reply{Content: []json.RawMessage{move(t, "toolu_1", 100, 120)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I see someone helped.")}},
	)
	resp, _ := e.stream("PUT", "/session", spec("Move", map[string]any{"approvals": map[string]any{"confirm": []string{"move"}}}))
	id := resp.Header.Get("X-Session-Id")

	input := map[string]any{"kind": "click", "at": map[string]int{"x": 10, "y": 20}, "has_at": true}
	r := e.request("POST", "/session/"+id+"/input", input)
	r.Body.Close()
	if r.StatusCode != http.StatusConflict {
		t.Errorf("input before takeover = %d, want 409", r.StatusCode)
	}
	r = e.request("POST", "/session/"+id+"/takeover", map[string]any{"active": true})
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("takeover = %d", r.StatusCode)
	}
	// Approve while the operator holds the display: the stream runs on
	// in the background until the hand-back.
	type result struct{ evs []sseEvent }
	done := make(chan result, 1)
	sresp := e.request("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool_permission", "toolCallId": "toolu_1", "granted": true}}})
	go func() {
		defer sresp.Body.Close()
		done <- result{readSSE(t, sresp.Body)}
	}()
	r = e.request("POST", "/session/"+id+"/input", input)
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(string(b), `"screenshot"`) {
		t.Fatalf("input = %d %.200s", r.StatusCode, b)
	}
	r = e.request("POST", "/session/"+id+"/takeover", map[string]any{"active": false})
	r.Body.Close()
	evs := (<-done).evs
	// The hand-back comes before the call's result: the call waited.
	// The operator's own input is in the stream and the history too.
	want := []string{"approval_decided:toolu_1", "operator_input", "takeover", "tool_result:toolu_1", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	var res session.ToolResultEvent
	_ = json.Unmarshal(evs[3].Data, &res)
	if !strings.Contains(res.Content[0].Text, session.HumanActed) {
		t.Errorf("tool_result text = %q, want the note that a human acted", res.Content[0].Text)
	}
	reqs := e.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "A human operator took control") {
		t.Errorf("the model was not told a human acted")
	}
	e.mu.Lock()
	performed := e.fakes[0].Performed()
	e.mu.Unlock()
	var got []actions.Kind
	for _, m := range performed {
		got = append(got, m.Kind)
	}
	// Navigate (the start page), the operator's click, then the model's move.
	if diff := cmp.Diff([]actions.Kind{actions.Navigate, actions.Click, actions.Move}, got); diff != "" {
		t.Errorf("performed (-want +got):\n%s", diff)
	}
	var audit struct{ Audit []struct{ Action string } }
	e.getJSON("/audit?session="+id, &audit)
	var acts []string
	for _, a := range audit.Audit {
		acts = append(acts, a.Action)
	}
	if diff := cmp.Diff([]string{"create", "takeover", "approve", "input", "takeover"}, acts); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

// A client that leaves mid-turn does not stop the turn: the session
// completes and a new stream replays what it missed.
func TestDisconnectMidTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{move(t, "toolu_1", 100, 120)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done without you.")}},
	)
	resp := e.request("PUT", "/session", spec("Move", nil))
	id := resp.Header.Get("X-Session-Id")
	first, err := newSSEReader(resp.Body).next()
	resp.Body.Close() // leave after the first event
	if err != nil || first.Type != "session" {
		t.Fatalf("first event = %+v, %v", first, err)
	}
	r := e.request("GET", "/session/"+id+"/events", nil)
	defer r.Body.Close()
	rd := newSSEReader(r.Body)
	var got []string
	for {
		ev, err := rd.next()
		if err != nil {
			t.Fatalf("events: %v (got %v)", err, got)
		}
		got = append(got, ev.Type)
		if ev.Type == "turn_stop" {
			break
		}
	}
	want := []string{"session", "tool_call", "tool_result", "text_delta", "turn_stop"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed events (-want +got):\n%s", diff)
	}
	// Last-Event-ID resumes after what the client has.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/session/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Last-Event-ID", "3")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	ev, err := newSSEReader(r2.Body).next()
	if err != nil || ev.ID != 4 || ev.Type != "text_delta" {
		t.Errorf("after Last-Event-ID 3: %+v, %v; want seq 4 text_delta", ev, err)
	}
}

// An operator's input goes through the same path as the model's actions,
// as actor operator: the session's policy (hosts, files, forbidden keys)
// refuses what it refuses for the model, with a 403 and the reason, and
// the audit keeps what was asked. A scoped token's holder is bound by the
// same policy.
func TestTakeoverInputFollowsThePolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("nothing to do")}},
	)
	resp, _ := e.stream("PUT", "/session", spec("Wait", map[string]any{"start_url": "https://shop.example/"}))
	id := resp.Header.Get("X-Session-Id")
	r := e.request("POST", "/session/"+id+"/takeover", map[string]any{"active": true})
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("takeover = %d", r.StatusCode)
	}
	refused := []map[string]any{
		{"kind": "navigate", "url": "https://evil.example/steal"},
		{"kind": "upload", "files": []string{"/etc/passwd"}},
		{"kind": "keypress", "keys": []string{"Control", "w"}},
	}
	for _, in := range refused {
		r := e.request("POST", "/session/"+id+"/input", in)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "not allowed") {
			t.Errorf("input %v = %d %s, want 403 with the policy's reason", in, r.StatusCode, b)
		}
	}
	// The display never saw them: only the start page was loaded.
	e.mu.Lock()
	performed := e.fakes[0].Performed()
	e.mu.Unlock()
	for _, m := range performed[1:] {
		t.Errorf("the display performed a refused input: %+v", m.Action)
	}
	// An allowed input still runs.
	r = e.request("POST", "/session/"+id+"/input", map[string]any{"kind": "navigate", "url": "https://shop.example/cart"})
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("allowed input = %d", r.StatusCode)
	}
	var audit struct {
		Audit []struct {
			Action string
			Detail json.RawMessage
		}
	}
	e.getJSON("/audit?session="+id, &audit)
	var inputs []string
	for _, a := range audit.Audit {
		if a.Action == "input" {
			inputs = append(inputs, string(a.Detail))
		}
	}
	if len(inputs) != 4 {
		t.Fatalf("audit has %d inputs, want 4: %v", len(inputs), inputs)
	}
	for i, want := range []string{"evil.example", "/etc/passwd", `"w"`, "shop.example/cart"} {
		if !strings.Contains(inputs[i], want) {
			t.Errorf("audit of input %d = %s, want it to name %s", i, inputs[i], want)
		}
	}
	for _, d := range inputs[:3] {
		if !strings.Contains(d, `"error"`) {
			t.Errorf("audit of a refused input has no error: %s", d)
		}
	}
}
