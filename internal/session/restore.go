package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// Restore loads every stored session but the stopped ones (Get reads
// those from the store when asked). A session whose run was cut short
// (the process died or was shut down mid-turn) resumes: its model's
// conversation is restored (harness.Stateful), its display is relaunched
// at its last page, its pending approvals are re-attached, and the loop
// answers the calls of the interrupted turn that had no result yet. An
// executor session resumes likewise, with the results of its latest calls,
// so that a client's retry finds them. A takeover holds the resumed turn
// until the operator hands the display back. Approvals that nothing waits
// for any more (their session is not resumed, or their call has its
// result) are closed with a reason.
func (m *Manager) Restore(ctx context.Context) error {
	recs, err := m.st.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	// Approvals first: a resumed run re-attaches to its pending ones.
	if err := m.restoreApprovals(ctx); err != nil {
		return err
	}
	var errs []error
	for i := len(recs) - 1; i >= 0; i-- { // oldest first
		if err := m.restoreOne(ctx, recs[i]); err != nil {
			errs = append(errs, fmt.Errorf("restore session %s: %w", recs[i].ID, err))
		}
	}
	m.closeUnawaited()
	return errors.Join(errs...)
}

// restoreOne restores a stored session (restore), and opens a live
// remote one again (resumeRemote).
func (m *Manager) restoreOne(ctx context.Context, rec store.Session) error {
	if err := m.restore(ctx, rec); err != nil {
		return err
	}
	live := rec.Status == store.StatusRunning || rec.Status == store.StatusWaiting
	if rec.Kind == KindMCP && live && m.cfg.ResumeRemote != nil {
		return m.resumeRemote(ctx, rec.ID)
	}
	return nil
}

// closeUnawaited closes the pending approvals that no restored run waits
// for, with a reason, so that nobody approves what cannot run.
func (m *Manager) closeUnawaited() {
	type key struct{ session, call string }
	seen := map[key]bool{}
	for _, p := range m.q.Pending() {
		k := key{p.Session, p.CallID}
		if seen[k] {
			continue
		}
		seen[k] = true
		m.mu.Lock()
		s := m.sessions[p.Session]
		m.mu.Unlock()
		if s == nil || !s.awaits(p.CallID) {
			m.closeOrphans(p.Session, p.CallID)
		}
	}
}

// awaits reports whether the session's run still owes call id an answer.
func (s *Session) awaits(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[id]
	return s.running && c != nil && c.state != callDone
}

func (m *Manager) restore(ctx context.Context, rec store.Session) error {
	if rec.Status == store.StatusStopped {
		return nil // read from the store when asked (Get)
	}
	var spec Spec
	if err := json.Unmarshal(rec.Config, &spec); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	s := m.newSession(rec, spec)
	if len(rec.State) > 0 {
		if err := json.Unmarshal(rec.State, &s.saved); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	if err := s.loadEvents(ctx); err != nil {
		return err
	}
	shots, err := m.st.Shots(ctx, rec.ID)
	if err != nil {
		return err
	}
	for _, sh := range shots {
		s.noteShotFrame(sh.FrameID, sh.Name)
		s.lastShot = sh.Name
	}
	if s.rules, err = m.rules(spec); err != nil {
		return err
	}
	if err := m.add(s); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	live := rec.Status == store.StatusRunning || rec.Status == store.StatusWaiting
	fail := func(why string) error {
		s.rec.Status, s.rec.Error = store.StatusFailed, m.scrub(why)
		s.saved.Run, s.saved.Task = nil, ""
		s.save()
		s.emit(EventTurnStop, TurnStopEvent{StopReason: StopError, Error: s.rec.Error})
		return nil
	}
	// A resumed session's browser is relaunched at its last page, past
	// MaxSessions if need be: it was let in before the restart.
	resumed := func() {
		s.restored = true
		if s.rec.URL != "" && !strings.HasPrefix(s.rec.URL, "about:") {
			s.relaunch = fmt.Sprintf("The server restarted: the browser was started anew at %s and the page was "+
				"loaded afresh, so anything not saved by the site is lost.", s.rec.URL)
		}
	}
	switch rec.Kind {
	case KindExecutor:
		s.exec = newExecModel()
		s.exec.markReady() // its first screenshot was sent before the restart
		s.model = s.exec
		for _, sc := range s.saved.Exec {
			s.exec.restoreAnswered(sc)
		}
		s.saved.Exec = nil // s.exec holds them from now on (stateJSON)
		if !live {
			s.exec.end(cmp.Or(s.rec.Error, "the executor session ended"))
			return nil
		}
		resumed()
		if err := s.resumeExecutor(ctx); err != nil {
			s.exec.end("the server restarted and the session could not resume")
			return fail(fmt.Sprintf("resume: %v", err))
		}
		return nil
	case KindMCP:
		// A live one is opened again by resumeRemote, once this returns.
		if live && m.cfg.ResumeRemote == nil {
			s.rec.Status, s.rec.Error = store.StatusStopped, "the server restarted; the MCP client reconnects with a new session"
			s.save()
		}
		return nil
	}
	if m.cfg.NewModel == nil {
		if live {
			return fail("the server has no model builder")
		}
		return nil
	}
	model, err := m.cfg.NewModel(ctx, spec, spec.image())
	if err != nil {
		return fail(fmt.Sprintf("rebuild the model: %v", err))
	}
	s.model = model
	if len(s.saved.Model) > 0 {
		sm, ok := model.(harness.Stateful)
		if !ok {
			return fail("the model adapter cannot restore its conversation")
		}
		if err := sm.UnmarshalState(s.saved.Model); err != nil {
			return fail(fmt.Sprintf("restore the model's conversation: %v", err))
		}
	}
	if !live {
		return nil
	}
	resumed()
	s.evMu.Lock()
	n := len(s.events)
	s.stopSent = n > 0 && s.events[n-1].Type == EventTurnStop
	s.evMu.Unlock()
	switch run := s.saved.Run; {
	case run != nil:
		resume, err := s.resumeOf(run)
		if err != nil {
			return fail(fmt.Sprintf("resume: %v", err))
		}
		s.running = false
		s.startResumed(resume)
	case s.saved.Task != "":
		// The run had not had a model turn yet (the process died in the
		// model's first call): it starts again, in a trace directory of
		// its own.
		s.start(context.Background(), s.saved.Task, nil) // no request started it: a trace of its own
	default:
		s.rec.Status = store.StatusIdle
		s.save()
	}
	return nil
}

// resumeExecutor resumes an executor session after a restart, once the
// results of its latest calls are known again: the ids of older ones
// answer ErrGone, the call the restart interrupted is answered, and the
// loop waits for the next one. s.mu is held.
func (s *Session) resumeExecutor(ctx context.Context) error {
	calls, err := s.m.st.ToolCalls(ctx, s.id)
	if err != nil {
		return fmt.Errorf("read its calls: %w", err)
	}
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		ids = append(ids, c.ID)
	}
	var r *harness.Resume
	if run := s.saved.Run; run != nil && len(run.Turn.Calls) > 0 {
		if r, err = s.resumeOf(run); err != nil {
			return err
		}
		for i, c := range r.Turn.Calls {
			if _, ok := s.exec.byID[c.ID]; !ok {
				s.exec.restoreRunning(c, run.Turn.Calls[i].Hash)
			}
		}
	} else {
		r = &harness.Resume{Step: s.rec.Step, Frames: s.saved.Frames}
		s.calls, s.callOrder = map[string]*callState{}, nil
	}
	s.exec.restoreGone(ids)
	s.running = false
	s.startResumed(r)
	return nil
}

// resumeOf rebuilds the harness.Resume of an interrupted turn, and the
// session's view of its calls. s.mu is held.
func (s *Session) resumeOf(run *savedRun) (*harness.Resume, error) {
	r := &harness.Resume{Step: run.Step, Frames: s.saved.Frames, Turn: harness.Turn{Text: run.Turn.Text,
		Stop: harness.StopReason(run.Turn.Stop)}}
	s.calls = map[string]*callState{}
	s.callOrder = nil
	done := map[string]bool{}
	for _, d := range run.Done {
		done[d.CallID] = true
		res := harness.Result{CallID: d.CallID, Ran: d.Ran, Notes: d.Notes, Output: d.Output, Err: harness.ResultErr(d.Err)}
		if d.Shot != "" {
			b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(d.Shot)))
			if err != nil {
				return nil, fmt.Errorf("screenshot of %s: %w", d.CallID, err)
			}
			res.Shot = &screen.Shot{Frame: d.Frame, Data: b}
		} else if !s.spec.hasTool(callName(run.Turn.Calls, d.CallID)) {
			return nil, fmt.Errorf("result of %s has no screenshot", d.CallID)
		}
		r.Done = append(r.Done, res)
	}
	for _, id := range run.Begun {
		if !done[id] {
			r.Begun = append(r.Begun, id)
		}
	}
	for _, c := range run.Turn.Calls {
		hc := harness.Call{ID: c.ID, Name: c.Name, Actions: c.Actions, Space: c.Space, FrameID: c.FrameID,
			SafetyChecks: c.SafetyChecks, Input: c.Input, Raw: c.Raw}
		if c.DecodeErr != "" {
			hc.DecodeErr = errors.New(c.DecodeErr)
		}
		r.Turn.Calls = append(r.Turn.Calls, hc)
		client := s.spec.hasTool(c.Name) && c.DecodeErr == "" && r.Turn.Stop != harness.StopMaxTokens
		cs := &callState{name: c.Name, client: client, state: callOpen}
		switch {
		case done[c.ID]:
			cs.state = callDone
		case client:
			cs.state = callClient
		case s.hasPending(c.ID):
			cs.state = callPermission
		}
		s.calls[c.ID] = cs
		s.callOrder = append(s.callOrder, c.ID)
	}
	return r, nil
}

func callName(cs []savedCall, id string) string {
	for _, c := range cs {
		if c.ID == id {
			return c.Name
		}
	}
	return ""
}

// startResumed starts a run that continues an interrupted turn. s.mu is
// held.
func (s *Session) startResumed(r *harness.Resume) {
	calls, order, stopSent := s.calls, s.callOrder, s.stopSent
	s.start(context.Background(), "", r) // no request started it: a trace of its own
	s.calls, s.callOrder, s.stopSent = calls, order, stopSent
	s.rec.Status = store.StatusRunning
	if stopSent {
		s.rec.Status = store.StatusWaiting
	}
	s.save()
}

// hasPending reports whether a call of the session waits for a human.
func (s *Session) hasPending(callID string) bool {
	_, ok := s.m.pendingFor(s.id, callID, anyIndex)
	return ok
}
