package session

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/store"
)

// Remote is a session whose calls run through a harness.Executor that
// another server owns (an MCP session): what its executor reports to.
type Remote struct {
	ID       string
	Approver harness.Approver
	// Trace is the session's trace directory; the screenshots there are
	// what its approvals and its history show.
	Trace *trace.Writer
	// OnEvent turns the executor's events into the session's history,
	// tool calls, results and stream, as for any session.
	OnEvent func(trace.Event)
}

// remoteDir is the trace directory of a remote session.
const remoteDir = "t1"

// AttachRemote records a session of kind (KindMCP) whose calls run
// elsewhere, with an approvals.Gate of the given rules and policy hosts on
// the Manager's queue (hit-testing display when it can). Detach ends it.
func (m *Manager) AttachRemote(ctx context.Context, kind, title, by string, rules approvals.Rules, hosts []string, display any) (Remote, error) {
	id, err := m.Attach(ctx, kind, title, by)
	if err != nil {
		return Remote{}, err
	}
	s, err := m.Get(id)
	if err != nil {
		return Remote{}, err
	}
	a, err := m.Approver(id, rules, hosts, display)
	if err != nil {
		return Remote{}, errors.Join(err, m.Detach(ctx, id))
	}
	tw, err := trace.Create(filepath.Join(s.dir, remoteDir))
	if err != nil {
		return Remote{}, errors.Join(err, m.Detach(ctx, id))
	}
	return Remote{ID: id, Approver: a, Trace: tw, OnEvent: func(e trace.Event) { s.onEvent(remoteDir, e) }}, nil
}

// closeOrphans denies the requests still pending for a call that has its
// result: nothing waits for them any more (a call resumed after a restart
// can end without asking again, as a secret whose text was not kept
// does), and a person must not be asked to approve what cannot run.
func (m *Manager) closeOrphans(session, callID string) {
	for _, p := range m.q.Pending() {
		if p.Session != session || p.CallID != callID {
			continue
		}
		err := m.q.Decide(p.ID, approvals.Verdict{Kind: approvals.Deny, By: bySystem, Reason: "the call ended without this decision"})
		if err != nil && !errors.Is(err, approvals.ErrDecided) && !errors.Is(err, approvals.ErrNotFound) {
			m.log.Error("close an approval nothing waits for", "session", session, "approval", p.ID, "err", err)
		}
	}
}

// onRemoteCall records a call of a remote session: its tool call row, its
// place in the history and its tool_call event, masked as recorded.
func (s *Session) onRemoteCall(e trace.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := ToolCallEvent{ToolCallID: e.CallID, Name: e.Name, Input: rawInput(e.Raw), Error: e.Error}
	s.rec.Step++
	s.putCall(store.ToolCall{ID: e.CallID, Step: s.rec.Step, Name: e.Name, Input: ev.Input, Status: store.CallRunning})
	s.appendMessage("assistant", assistantContent{ToolCalls: []ToolCallEvent{ev}}, "")
	s.save()
	s.emit(EventToolCall, ev)
}
