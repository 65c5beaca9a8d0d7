package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

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

// RemoteSpec is a remote session to record.
type RemoteSpec struct {
	ID              string // "" for a new id (NewID)
	Kind, Title, By string
	Rules           approvals.Rules // its approval gate's
	Hosts           []string        // its policy's hosts, for the rules
	// Conn is the MCP connection it belongs to (store.Session.Conn): the
	// sessions of one connection are adopted together.
	Conn string
	// State is what the server running it needs to resume it after a
	// restart or on another replica (RemoteResume.State).
	State json.RawMessage
}

// RemoteResume is a live remote session to open again (Config.ResumeRemote).
type RemoteResume struct {
	ID    string
	Kind  string
	URL   string          // its last page ("" if none was seen)
	State json.RawMessage // RemoteSpec.State
	// FrameSeq is the number of its latest screenshot ("f0012": 12).
	FrameSeq int
	// Note tells its client what happened, with the result of its next
	// call.
	Note string
}

// AttachRemote records a session of spec.Kind (KindMCP) whose calls run
// elsewhere, with an approvals.Gate of spec's rules and policy hosts on
// the Manager's queue (hit-testing display when it can). Detach ends it.
func (m *Manager) AttachRemote(ctx context.Context, spec RemoteSpec, display any) (Remote, error) {
	id, err := m.attach(ctx, spec)
	if err != nil {
		return Remote{}, err
	}
	r, err := m.ReattachRemote(id, spec.Rules, spec.Hosts, display)
	if err != nil {
		return Remote{}, errors.Join(err, m.Detach(ctx, id))
	}
	return r, nil
}

// ReattachRemote gives a recorded remote session (a new one, or one
// resumed on a new display) what its executor reports to: an approver of
// rules and hosts on display, and a trace directory of its own.
func (m *Manager) ReattachRemote(id string, rules approvals.Rules, hosts []string, display any) (Remote, error) {
	s, err := m.Get(id)
	if err != nil {
		return Remote{}, err
	}
	a, err := m.Approver(id, rules, hosts, display)
	if err != nil {
		return Remote{}, err
	}
	s.mu.Lock()
	dir := s.nextRun()
	s.save()
	s.mu.Unlock()
	tw, err := trace.Create(filepath.Join(s.dir, dir))
	if err != nil {
		return Remote{}, err
	}
	return Remote{ID: id, Approver: a, Trace: tw, OnEvent: func(e trace.Event) { s.onEvent(dir, e) }}, nil
}

// resumeRemote opens a live remote session again through
// Config.ResumeRemote, after a restart or an adoption; the approvals its
// interrupted call waited for are closed (nothing waits for them). One
// that cannot be opened fails with the reason.
func (m *Manager) resumeRemote(ctx context.Context, id string) error {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	for _, p := range m.q.Pending() {
		if p.Session == id {
			m.closeOrphans(id, p.CallID)
		}
	}
	s.mu.Lock()
	r := RemoteResume{ID: id, Kind: s.kind, URL: s.rec.URL, State: s.saved.Remote}
	if n := len(s.saved.Frames); n > 0 {
		r.FrameSeq, _ = strconv.Atoi(strings.TrimPrefix(s.saved.Frames[n-1].ID, "f"))
	}
	s.mu.Unlock()
	r.Note = "The server that ran this session stopped (a restart, or another replica took the session over): " +
		"its browser was started anew"
	if r.URL != "" {
		r.Note += " at " + r.URL + "; the page was loaded afresh, so anything not saved by the site is lost"
	}
	r.Note += ". Take a screenshot before acting on an earlier one."
	err := m.cfg.ResumeRemote(ctx, r)
	if err == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Status, s.rec.Error = store.StatusFailed, m.scrub(fmt.Sprintf("could not be resumed: %v", err))
	s.save()
	s.emit(EventTurnStop, TurnStopEvent{StopReason: StopError, Error: s.rec.Error})
	return err
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
