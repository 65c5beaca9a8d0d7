package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
)

var confirmClicks = map[string]any{"approvals": map[string]any{"confirm": []string{"click"}}}

// The seed's first flow: an application-side tool.
func TestFlowApplicationTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.ToolUse("call_001", "lookup_booking", map[string]string{"name": "Ada"})}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Ada is booked on flight 42.")}},
	)
	tools := map[string]any{"tools": []map[string]any{{"name": "lookup_booking", "description": "find a booking",
		"input_schema": map[string]any{"type": "object"}}}}
	resp, evs := e.stream("PUT", "/session", spec("Check in passenger Ada", tools))
	id := resp.Header.Get("X-Session-Id")
	want := []string{"session", "tool_call:call_001", "turn_stop:tool_use"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("PUT /session events (-want +got):\n%s", diff)
	}
	var call session.ToolCallEvent
	if err := json.Unmarshal(evs[1].Data, &call); err != nil || call.Name != "lookup_booking" || !strings.Contains(string(call.Input), "Ada") {
		t.Errorf("tool_call = %s (%v), want lookup_booking with its input", evs[1].Data, err)
	}

	// A client with no memory finds the unresolved call in the history.
	var h session.History
	e.getJSON("/session/"+id, &h)
	if got := unresolved(h); !cmp.Equal(got, []string{"call_001"}) {
		t.Errorf("unresolved calls in history = %v, want [call_001]", got)
	}

	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool", "toolCallId": "call_001", "content": "booking 42"}}})
	want = []string{"text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("POST /session/:id events (-want +got):\n%s", diff)
	}
	if got := evs[0].field("text"); got != "Ada is booked on flight 42." {
		t.Errorf("text_delta = %q", got)
	}
	reqs := e.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "booking 42") {
		t.Errorf("the model's last request lacks the tool's result: %s", last)
	}
	e.getJSON("/session/"+id, &h)
	if got := unresolved(h); len(got) != 0 {
		t.Errorf("unresolved calls after the answer = %v, want none", got)
	}
	checkSeq(t, e, id)
}

// The seed's second flow: a trusted server tool runs inline.
func TestFlowTrustedServerTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{move(t, "toolu_1", 100, 120)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Moved.")}},
	)
	resp, evs := e.stream("PUT", "/session", spec("Move the pointer", confirmClicks))
	want := []string{"session", "tool_call:toolu_1", "tool_result:toolu_1", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	var res session.ToolResultEvent
	if err := json.Unmarshal(evs[2].Data, &res); err != nil || res.IsError || len(res.Content) != 2 || res.Content[1].Type != "image" {
		t.Fatalf("tool_result = %s (%v), want a text and an image", evs[2].Data, err)
	}
	// The screenshot is served.
	img := e.request("GET", res.Content[1].URL, nil)
	b, _ := io.ReadAll(img.Body)
	img.Body.Close()
	if img.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("GET %s = %d (%d bytes), want a PNG", res.Content[1].URL, img.StatusCode, len(b))
	}
	checkSeq(t, e, resp.Header.Get("X-Session-Id"))
}

// The seed's third flow: a server tool that needs permission, granted.
func TestFlowPermission(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Clicking Buy."), click(t, "toolu_1", 300, 200)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Bought.")}},
	)
	resp, evs := e.stream("PUT", "/session", spec("Buy it", confirmClicks))
	id := resp.Header.Get("X-Session-Id")
	want := []string{"session", "text_delta", "tool_call:toolu_1", "permission_request:toolu_1", "turn_stop:tool_use"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("PUT events (-want +got):\n%s", diff)
	}
	var pr session.PermissionRequest
	if err := json.Unmarshal(evs[3].Data, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Marker == nil || pr.Marker.X != 300 || pr.Marker.Y != 200 || pr.ModelText != "Clicking Buy." || pr.Rule == "" || pr.Shot == "" {
		t.Errorf("permission_request = %+v, want marker (300,200), the model's text, a rule and a shot", pr)
	}
	var h session.History
	e.getJSON("/session/"+id, &h)
	if got := unresolved(h); !cmp.Equal(got, []string{"toolu_1"}) {
		t.Errorf("unresolved calls = %v, want [toolu_1]", got)
	}

	// A permission is not a tool result: a tool message for the call
	// cannot stand in for a human's decision.
	r := e.request("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool", "toolCallId": "toolu_1", "content": "approved"}}})
	r.Body.Close()
	if r.StatusCode != http.StatusConflict {
		t.Errorf("tool message for a call waiting for permission = %d, want 409", r.StatusCode)
	}
	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool_permission", "toolCallId": "toolu_1", "granted": true}}})
	want = []string{"approval_decided:toolu_1", "tool_result:toolu_1", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("POST events (-want +got):\n%s", diff)
	}
	// The decision is audited with what the human saw.
	var audit struct {
		Audit []struct {
			Actor, Action, Subject string
			Detail                 json.RawMessage
		}
	}
	e.getJSON("/audit?session="+id, &audit)
	found := false
	for _, a := range audit.Audit {
		if a.Action == "approve" && a.Subject == pr.ApprovalID && a.Actor == "token:api" && strings.Contains(string(a.Detail), `"marker"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("audit log %+v has no approve entry for %s with the request", audit.Audit, pr.ApprovalID)
	}
	// A second decision on the same call is a conflict.
	r = e.request("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool_permission", "toolCallId": "toolu_1", "granted": true}}})
	r.Body.Close()
	if r.StatusCode != http.StatusConflict {
		t.Errorf("second tool_permission = %d, want 409", r.StatusCode)
	}
	checkSeq(t, e, id)
}

// A denial reaches the model with the human's reason.
func TestFlowPermissionDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{click(t, "toolu_1", 300, 200)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Understood.")}},
	)
	resp, _ := e.stream("PUT", "/session", spec("Buy it", confirmClicks))
	id := resp.Header.Get("X-Session-Id")
	_, evs := e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool_permission", "toolCallId": "toolu_1", "granted": false, "reason": "not that button"}}})
	want := []string{"approval_decided:toolu_1", "tool_result:toolu_1", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	var res session.ToolResultEvent
	_ = json.Unmarshal(evs[1].Data, &res)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "not that button") {
		t.Errorf("tool_result = %s, want an error with the reason", evs[1].Data)
	}
	reqs := e.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "not that button") {
		t.Errorf("the model never saw the reason: %s", last)
	}
}

// The seed's parallel example: two application-side tools, a trusted and
// an untrusted server tool in one turn.
func TestFlowParallel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.ToolUse("call_001", "client_tool_1", map[string]int{"a": 1}),
			anthropictest.ToolUse("call_002", "client_tool_2", map[string]int{"b": 2}),
			move(t, "call_003", 50, 60),
			click(t, "call_004", 300, 200),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("All four done.")}},
	)
	extra := map[string]any{
		"tools":     []map[string]any{{"name": "client_tool_1"}, {"name": "client_tool_2"}},
		"approvals": map[string]any{"confirm": []string{"click"}},
	}
	resp, evs := e.stream("PUT", "/session", spec("Do four things", extra))
	id := resp.Header.Get("X-Session-Id")
	want := []string{"session", "tool_call:call_001", "tool_call:call_002", "tool_call:call_003", "tool_call:call_004",
		"tool_result:call_003", "permission_request:call_004", "turn_stop:tool_use"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("first stream (-want +got):\n%s", diff)
	}
	var h session.History
	e.getJSON("/session/"+id, &h)
	if got := unresolved(h); !cmp.Equal(got, []string{"call_001", "call_002", "call_004"}) {
		t.Errorf("unresolved = %v, want call_001, call_002, call_004", got)
	}
	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool", "toolCallId": "call_001", "content": "one"},
		{"role": "tool", "toolCallId": "call_002", "content": "two"},
		{"role": "tool_permission", "toolCallId": "call_004", "granted": true},
	}})
	want = []string{"approval_decided:call_004", "tool_result:call_004", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("second stream (-want +got):\n%s", diff)
	}
	reqs := e.model.Requests()
	last := string(reqs[len(reqs)-1].Body)
	for _, s := range []string{"call_001", "call_002", "call_003", "call_004", `"one"`, `"two"`} {
		if !strings.Contains(last, s) {
			t.Errorf("the model's second request lacks %s", s)
		}
	}
	checkSeq(t, e, id)
}

// A partial answer ends the stream at once with another turn_stop; the
// rest may come later.
func TestPartialAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{},
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.ToolUse("call_001", "t1", map[string]int{}),
			anthropictest.ToolUse("call_002", "t2", map[string]int{}),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("ok")}},
	)
	extra := map[string]any{"tools": []map[string]any{{"name": "t1"}, {"name": "t2"}}}
	resp, _ := e.stream("PUT", "/session", spec("go", extra))
	id := resp.Header.Get("X-Session-Id")
	_, evs := e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool", "toolCallId": "call_001", "content": "one"}}})
	if diff := cmp.Diff([]string{"turn_stop:tool_use"}, kinds(evs)); diff != "" {
		t.Fatalf("partial answer (-want +got):\n%s", diff)
	}
	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool", "toolCallId": "call_002", "content": "two"}}})
	if diff := cmp.Diff([]string{"text_delta", "turn_stop:end_turn"}, kinds(evs)); diff != "" {
		t.Fatalf("rest (-want +got):\n%s", diff)
	}
	// A user message continues the idle session with a new turn.
	e.model.Add(anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("again")}})
	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "once more"}}})
	if diff := cmp.Diff([]string{"text_delta", "turn_stop:end_turn"}, kinds(evs)); diff != "" {
		t.Fatalf("new turn (-want +got):\n%s", diff)
	}
	checkSeq(t, e, id)
}

// unresolved lists the calls of the last assistant message with no tool
// message, as a client without memory would.
func unresolved(h session.History) []string {
	var last []string
	answered := map[string]bool{}
	for _, m := range h.Messages {
		switch m.Role {
		case "assistant":
			last = nil
			for _, c := range m.ToolCalls {
				last = append(last, c.ToolCallID)
			}
		case "tool":
			answered[m.ToolCallID] = true
		}
	}
	var out []string
	for _, id := range last {
		if !answered[id] {
			out = append(out, id)
		}
	}
	return out
}

// checkSeq reads the whole stored stream and checks its seq is 1..N.
func checkSeq(t *testing.T, e *env, id string) []sseEvent {
	t.Helper()
	var h session.History
	e.getJSON("/session/"+id, &h)
	evs := replay(t, e, id, h.LastSeq)
	for i, ev := range evs {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has seq %d: the stream has a gap", i+1, ev.ID)
		}
	}
	if int64(len(evs)) != h.LastSeq {
		t.Fatalf("replayed %d events, history says %d", len(evs), h.LastSeq)
	}
	return evs
}

// replay reads /events from the start until seq last.
func replay(t *testing.T, e *env, id string, last int64) []sseEvent {
	t.Helper()
	resp := e.request("GET", "/session/"+id+"/events?after=0", nil)
	defer resp.Body.Close()
	var evs []sseEvent
	r := newSSEReader(resp.Body)
	for len(evs) == 0 || evs[len(evs)-1].ID < last {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("events: %v after %d", err, len(evs))
		}
		evs = append(evs, ev)
	}
	return evs
}

// An approval nobody decides expires, and counts as a denial the model
// reads.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true, timeout: time.Millisecond},
		anthropictest.Reply{Content: []json.RawMessage{click(t, "toolu_1", 300, 200)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Nobody answered.")}},
	)
	resp, evs := e.stream("PUT", "/session", spec("Buy it", confirmClicks))
	id := resp.Header.Get("X-Session-Id")
	// The stream may end at the permission's turn_stop or run on to the end.
	if kinds(evs)[len(kinds(evs))-1] == "turn_stop:tool_use" {
		r := e.request("GET", "/session/"+id+"/events?after="+strconv.FormatInt(evs[len(evs)-1].ID, 10), nil)
		rd := newSSEReader(r.Body)
		for {
			ev, err := rd.next()
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
			if ev.Type == "turn_stop" {
				break
			}
		}
		r.Body.Close()
	}
	var decided *sseEvent
	for i := range evs {
		if evs[i].Type == "approval_decided" {
			decided = &evs[i]
		}
	}
	if decided == nil || decided.field("status") != "expired" || decided.field("by") != "system" {
		t.Fatalf("events %v: want an approval_decided expired by system", kinds(evs))
	}
	reqs := e.model.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "no human decided in time") {
		t.Errorf("the model was not told the approval expired")
	}
}
