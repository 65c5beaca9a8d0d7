package web_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/store/pgtest"
)

// A server restarted with a call waiting for permission and another for
// the client picks the turn up where it was: the approval is still
// pending, the history shows both calls unresolved, and answering them
// completes the session with a gap-free stream.
func testRestart(t *testing.T, o envOpts) {
	e := newEnv(t, o,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.ToolUse("call_001", "client_tool_1", map[string]int{"a": 1}),
			move(t, "call_003", 50, 60),
			click(t, "call_004", 300, 200),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Finished after the restart.")}},
	)
	extra := map[string]any{
		"tools":     []map[string]any{{"name": "client_tool_1"}},
		"approvals": map[string]any{"confirm": []string{"click"}},
	}
	resp, evs := e.stream("PUT", "/session", spec("Three things", extra))
	id := resp.Header.Get("X-Session-Id")
	if got := kinds(evs); got[len(got)-1] != "turn_stop:tool_use" {
		t.Fatalf("first stream = %v, want it to stop for the client", got)
	}
	e.restart()

	var h session.History
	e.getJSON("/session/"+id, &h)
	if got := unresolved(h); !cmp.Equal(got, []string{"call_001", "call_004"}) {
		t.Errorf("unresolved after restart = %v, want call_001 and call_004", got)
	}
	if h.Session.Status != "waiting" {
		t.Errorf("status after restart = %q, want waiting", h.Session.Status)
	}
	var pend struct {
		Approvals []struct{ ID, ToolCallID string }
	}
	e.getJSON("/approvals?status=pending&session="+id, &pend)
	if len(pend.Approvals) != 1 || pend.Approvals[0].ToolCallID != "call_004" {
		t.Fatalf("pending approvals after restart = %+v", pend.Approvals)
	}
	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{
		{"role": "tool", "toolCallId": "call_001", "content": "one"},
		{"role": "tool_permission", "toolCallId": "call_004", "granted": true},
	}})
	want := []string{"approval_decided:call_004", "tool_result:call_004", "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want, kinds(evs)); diff != "" {
		t.Fatalf("stream after restart (-want +got):\n%s", diff)
	}
	all := checkSeq(t, e, id)
	wantAll := []string{"session", "tool_call:call_001", "tool_call:call_003", "tool_call:call_004", "tool_result:call_003",
		"permission_request:call_004", "turn_stop:tool_use", "approval_decided:call_004", "tool_result:call_004",
		"text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(wantAll, kinds(all)); diff != "" {
		t.Errorf("stored stream (-want +got):\n%s", diff)
	}
	if n := len(e.model.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2", n)
	}
}

func TestRestartSQLite(t *testing.T) {
	t.Parallel()
	testRestart(t, envOpts{})
}

func TestRestartPostgres(t *testing.T) {
	t.Parallel()
	testRestart(t, envOpts{db: pgtest.Start(t)})
}
