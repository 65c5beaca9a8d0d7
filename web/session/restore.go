package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// Restore loads every stored session. A session whose run was cut short
// (the process died or was shut down mid-turn) resumes: its model's
// conversation is restored (harness.Stateful), its display is relaunched
// at its last page, its pending approvals are re-attached, and the loop
// answers the calls of the interrupted turn that had no result yet.
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
		if err := m.restore(ctx, recs[i]); err != nil {
			errs = append(errs, fmt.Errorf("restore session %s: %w", recs[i].ID, err))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) restore(ctx context.Context, rec store.Session) error {
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
	evs, err := m.st.Events(ctx, rec.ID, 0)
	if err != nil {
		return err
	}
	s.events = evs
	shots, err := m.st.Shots(ctx, rec.ID)
	if err != nil {
		return err
	}
	for _, sh := range shots {
		s.shotFrames[sh.FrameID] = sh.Name
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
		s.rec.Status, s.rec.Error = store.StatusFailed, why
		s.saved.Run, s.saved.Task = nil, ""
		s.save()
		s.emit(EventTurnStop, TurnStopEvent{StopReason: StopError, Error: why})
		return nil
	}
	switch rec.Kind {
	case KindExecutor:
		if live {
			return fail("the server restarted; create a new executor session")
		}
		return nil
	case KindMCP:
		if live {
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
	s.stopSent = len(evs) > 0 && evs[len(evs)-1].Type == EventTurnStop
	switch run := s.saved.Run; {
	case run != nil:
		resume, err := s.resumeOf(run)
		if err != nil {
			return fail(fmt.Sprintf("resume: %v", err))
		}
		s.running = false
		s.startResumed(resume)
	case s.saved.Task != "":
		s.saved.Runs-- // start counts it again
		s.start(s.saved.Task, nil)
	default:
		s.rec.Status = store.StatusIdle
		s.save()
	}
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
		res := harness.Result{CallID: d.CallID, Ran: d.Ran, Notes: d.Notes, Output: d.Output}
		if d.Err != "" {
			res.Err = errors.New(d.Err)
		}
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
	s.start("", r)
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
