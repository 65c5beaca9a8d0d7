package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// Decision is a human's answer to an approval (POST /approvals/:id, or a
// tool_permission message).
type Decision struct {
	Decision string `json:"decision"` // approve, deny or edit
	Reason   string `json:"reason,omitempty"`
	Edit     *Edit  `json:"edit,omitempty"`
}

func (d Decision) check() error {
	switch d.Decision {
	case "approve", "deny":
		if d.Edit != nil {
			return bad("only an edit decision carries an edit")
		}
	case "edit":
		if d.Edit == nil || (d.Edit.At == nil && d.Edit.Text == nil) {
			return bad("an edit decision needs edit.at or edit.text")
		}
	default:
		return bad("decision %q: want approve, deny or edit", d.Decision)
	}
	return nil
}

// pending is an approval waiting for a human. Its decided channel carries
// the outcome once, to the loop's Approve call.
type pending struct {
	id      string
	callID  string
	index   int
	req     PermissionRequest
	decided chan outcome // buffered 1
	done    bool         // decided; the loop has not picked it up yet
}

type outcome struct {
	d   harness.Decision
	err error
}

// pendingFor returns the undecided approval of a call. s.mu is held.
func (s *Session) pendingFor(callID string) *pending {
	var ps []*pending
	for _, p := range s.pending {
		if p.callID == callID && !p.done {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *pending) int { return a.index - b.index })
	if len(ps) == 0 {
		return nil
	}
	return ps[0]
}

// Approve implements harness.Approver: it lets through what the rules do
// not flag, and otherwise records an approval, tells the client
// (permission_request) and waits for a human, the timeout, or the end of
// the run. A refusal wraps harness.ErrDenied with the reason the model
// sees.
func (s *Session) Approve(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
	rule, reason, target := s.check(ctx, r)
	if rule == "" {
		return harness.Decision{}, nil
	}
	s.mu.Lock()
	var p *pending
	var err error
	for _, q := range s.pending {
		if q.callID == r.CallID && q.index == r.Index {
			p = q // re-attached after a restart
			break
		}
	}
	if p == nil {
		if p, err = s.request(ctx, r, rule, reason, target); err != nil {
			s.mu.Unlock()
			return harness.Decision{}, fmt.Errorf("%w: %v", harness.ErrDenied, err)
		}
	}
	if c := s.calls[r.CallID]; c != nil && !p.done {
		c.state = callPermission
	}
	s.maybeStop()
	deadline := p.req.Deadline
	s.mu.Unlock()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case o := <-p.decided:
		s.forget(p)
		return o.d, o.err
	case <-timer.C:
		return s.expire(p, "no human decided in time", "expire")
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errShutdown) {
			return harness.Decision{}, context.Cause(ctx) // stays pending for the next start
		}
		return s.expire(p, "the session was stopped", "cancel")
	}
}

func (s *Session) forget(p *pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, p.id)
}

// request records a new approval and emits permission_request. s.mu is held.
func (s *Session) request(ctx context.Context, r harness.ApprovalRequest, rule, reason string, target *screen.Target) (*pending, error) {
	id, err := newID("a")
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	timeout := cmp.Or(s.rules.Timeout, s.m.cfg.ApprovalTimeout, approvals.DefaultTimeout)
	req := PermissionRequest{ToolCallID: r.CallID, ApprovalID: id, Index: r.Index, Rule: rule, Reason: reason,
		Action: r.Action, ModelText: r.ModelText, Deadline: now.Add(timeout)}
	if len(r.SafetyChecks) > 0 {
		req.Safety = r.SafetyChecks
	}
	if target != nil {
		req.Target = target
	}
	if r.Mapped != nil && r.Mapped.HasAt {
		p := r.Frame.FromCSS(r.Mapped.At)
		req.Marker = &p
	}
	if name := s.shotFrames[r.Frame.ID]; name != "" {
		req.Shot = ShotURL(s.id, name)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	a := store.Approval{ID: id, Session: s.id, CallID: r.CallID, Index: r.Index, Rule: rule, Reason: reason,
		Request: b, Status: store.ApprovalPending, Created: now, Deadline: req.Deadline}
	if err := s.m.st.PutApproval(context.WithoutCancel(ctx), a); err != nil {
		return nil, fmt.Errorf("store approval: %w", err)
	}
	p := &pending{id: id, callID: r.CallID, index: r.Index, req: req, decided: make(chan outcome, 1)}
	s.pending[id] = p
	s.setCallStatus(r.CallID, store.CallPermission, nil)
	s.emit(EventPermissionRequest, req)
	return p, nil
}

// Decide applies a human's decision to one of the session's approvals.
// A decision on an approval that is no longer pending is ErrConflict.
func (s *Session) Decide(ctx context.Context, approvalID string, d Decision, by string) error {
	if err := d.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[approvalID]
	if !ok || p.done {
		a, err := s.m.st.Approval(ctx, approvalID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("approval %q: %w", approvalID, ErrNotFound)
		case err != nil:
			return err
		case a.Status != store.ApprovalPending || ok:
			return fmt.Errorf("%w: approval %s is %s", ErrConflict, approvalID, a.Status)
		}
		return fmt.Errorf("%w: approval %s belongs to no waiting run", ErrConflict, approvalID)
	}
	if err := s.decideLocked(ctx, p, d, by); err != nil {
		return err
	}
	s.stopSent = false
	s.maybeStop()
	return nil
}

// decideLocked records a decision and hands it to the waiting loop.
// s.mu is held.
func (s *Session) decideLocked(ctx context.Context, p *pending, d Decision, by string) error {
	if err := d.check(); err != nil {
		return err
	}
	status := map[string]string{"approve": store.ApprovalApproved, "deny": store.ApprovalDenied,
		"edit": store.ApprovalEdited}[d.Decision]
	var o outcome
	switch d.Decision {
	case "deny":
		why := cmp.Or(d.Reason, "no reason given")
		o.err = fmt.Errorf("%w by a human: %s", harness.ErrDenied, why)
	case "edit":
		a := p.req.Action
		if d.Edit.At != nil {
			a.At, a.HasAt = *d.Edit.At, true
		}
		if d.Edit.Text != nil {
			a.Text = *d.Edit.Text
		}
		o.d.Edit = &a
	}
	if d.Reason != "" && d.Decision != "deny" {
		o.d.Notes = []string{"The human who approved this step said: " + d.Reason}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if _, err := s.m.st.Decide(ctx, p.id, status, b, by, time.Now().UTC()); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("%w: approval %s was already decided", ErrConflict, p.id)
		}
		return err
	}
	s.m.audit(ctx, by, d.Decision, s.id, p.id, map[string]any{"request": p.req, "decision": d})
	p.done = true
	p.decided <- o
	if c := s.calls[p.callID]; c != nil && c.state == callPermission {
		c.state = callOpen
	}
	if o.err != nil {
		s.denied[p.callID] = true
	}
	s.setCallStatus(p.callID, store.CallRunning, nil)
	s.emit(EventApprovalDecided, DecidedEvent{ApprovalID: p.id, ToolCallID: p.callID, Status: status, By: by, Reason: d.Reason})
	return nil
}

// expire ends an approval nobody decided; it counts as a denial. A
// decision that won the race is returned instead.
func (s *Session) expire(p *pending, why, action string) (harness.Decision, error) {
	s.mu.Lock()
	if p.done {
		s.mu.Unlock()
		o := <-p.decided
		s.forget(p)
		return o.d, o.err
	}
	ctx := context.WithoutCancel(s.m.base)
	b, _ := json.Marshal(map[string]string{"reason": why})
	_, err := s.m.st.Decide(ctx, p.id, store.ApprovalExpired, b, "system", time.Now().UTC())
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.log.Error("expire approval", "err", err)
	}
	p.done = true
	delete(s.pending, p.id)
	s.denied[p.callID] = true
	if c := s.calls[p.callID]; c != nil && c.state == callPermission {
		c.state = callOpen
	}
	s.m.audit(ctx, "system", action, s.id, p.id, map[string]any{"request": p.req, "reason": why})
	s.emit(EventApprovalDecided, DecidedEvent{ApprovalID: p.id, ToolCallID: p.callID, Status: store.ApprovalExpired,
		By: "system", Reason: why})
	s.mu.Unlock()
	return harness.Decision{}, fmt.Errorf("%w: %s", harness.ErrDenied, why)
}
