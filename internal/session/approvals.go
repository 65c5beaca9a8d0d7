package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/store"
)

// Approvals: every session's flagged actions (and those of the Approvers
// the Manager hands out, such as MCP sessions') wait in the Manager's one
// approvals.Queue. Its hooks persist each request before it is queued,
// audit each decision before it is taken, and only then tell the session's
// stream (permission_request, approval_decided), so that a client reacting
// to an event finds the request, and a decision's event precedes whatever
// the released action does.

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

// verdict turns d into the queue's Verdict on r. An edited point is in the
// pixels of the screenshot the request shows (its marker).
func (d Decision) verdict(r approvals.Request, by string) (approvals.Verdict, error) {
	if err := d.check(); err != nil {
		return approvals.Verdict{}, err
	}
	v := approvals.Verdict{Kind: approvals.VerdictKind(d.Decision), Reason: d.Reason, By: by}
	if d.Edit != nil {
		a := r.Action
		switch {
		case d.Edit.At != nil:
			a.At, a.HasAt = *d.Edit.At, true
		case a.HasAt && r.Marker != nil:
			a.At = *r.Marker // the action's own point, in the image's pixels
		}
		if d.Edit.Text != nil {
			a.Text = *d.Edit.Text
		}
		v.Edit = &a
	}
	return v, nil
}

// Who decides when nobody did.
const (
	byTimeout = "timeout" // the queue: the deadline passed
	bySystem  = "system"  // the server: the run ended first
)

// rulesOf reads a spec's approval rules: the rules document (the YAML
// schema of package approvals, as JSON), or the server's (nil: the
// defaults), with Supervise and Confirm on top. A document that names no
// timeout leaves it to the server.
func rulesOf(spec Spec, server *approvals.Rules) (approvals.Rules, error) {
	var r approvals.Rules // the zero Rules are the defaults; Timeout 0 leaves it to the server
	if server != nil {
		r = *server
		r.Rules = slices.Clone(server.Rules)
	}
	if len(spec.Approvals.Rules) > 0 {
		var err error
		if r, err = approvals.Parse(spec.Approvals.Rules); err != nil {
			return r, bad("approvals.rules: %v", err)
		}
		var named map[string]json.RawMessage
		if json.Unmarshal(spec.Approvals.Rules, &named) == nil {
			if _, ok := named["timeout"]; !ok {
				r.Timeout = 0
			}
		}
	}
	r.Supervise = approvals.Supervise(spec.Approvals.Supervise)
	if len(spec.Approvals.Confirm) > 0 {
		r.Rules = append(r.Rules, approvals.Rule{Name: "confirm", Kinds: spec.Approvals.Confirm,
			Reason: "this session confirms these kinds of actions"})
	}
	if err := r.Validate(); err != nil {
		return r, bad("approvals: %v", err)
	}
	return r, nil
}

// Queue returns the queue every approval of the Manager's sessions waits
// in.
func (m *Manager) Queue() *approvals.Queue { return m.q }

// Approver returns the harness.Approver of session id: an approvals.Gate
// on the Manager's queue with the given rules, policy hosts and display
// (hit-tested when it is an approvals.HitTester). When the caller's
// context ends for any reason but the server's shutdown, the request it
// waited for is denied ("the session was stopped"); on shutdown it stays
// pending, for the next start.
func (m *Manager) Approver(id string, rules approvals.Rules, hosts []string, display any) (harness.Approver, error) {
	cfg := approvals.GateConfig{Queue: m.q, Rules: rules, Session: id, PolicyHosts: hosts,
		Timeout: cmp.Or(rules.Timeout, m.cfg.ApprovalTimeout), Logger: m.log}
	if ht, ok := display.(approvals.HitTester); ok {
		cfg.HitTester = ht
	}
	if dr, ok := display.(approvals.DialogReporter); ok {
		cfg.Dialogs = dr
	}
	g, err := approvals.NewGate(cfg)
	if err != nil {
		return nil, err
	}
	return &approver{m: m, session: id, gate: g}, nil
}

// approver is a Gate that tells the model in the words of the session
// protocol, and gives up the requests of runs that end.
type approver struct {
	m       *Manager
	session string
	gate    *approvals.Gate
}

func (a *approver) Approve(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
	d, err := a.gate.Approve(ctx, r)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, approvals.ErrExpired):
		return d, fmt.Errorf("%w: no human decided in time", err)
	case ctx.Err() == nil && !errors.Is(err, harness.ErrDenied):
		// The request could not be put before a human (the store
		// failed, say). The action does not run; the model and the
		// client read a refusal, the log the reason.
		a.m.log.ErrorContext(ctx, "approval request failed", "session", a.session, "call", r.CallID, "index", r.Index, "err", err)
		return d, fmt.Errorf("%w: %s", harness.ErrDenied, unasked(r))
	case ctx.Err() == nil || errors.Is(context.Cause(ctx), errShutdown):
		return d, err
	}
	const why = "the session was stopped"
	if p, ok := a.m.pendingFor(a.session, r.CallID, r.Index); ok {
		derr := a.m.q.Decide(p.ID, approvals.Verdict{Kind: approvals.Deny, By: bySystem, Reason: why})
		if derr != nil && !errors.Is(derr, approvals.ErrDecided) && !errors.Is(derr, approvals.ErrNotFound) {
			a.m.log.Error("deny the approval of a stopped run", "session", a.session, "approval", p.ID, "err", derr)
		}
	}
	return d, fmt.Errorf("%w: %s", harness.ErrDenied, why)
}

// unasked tells the model that r could not be put before a human.
func unasked(r harness.ApprovalRequest) string {
	if r.Index < 0 {
		return "the provider's safety checks could not be put before a human, so the call did not run"
	}
	return "this action could not be put before a human, so it did not run"
}

// pendingFor returns the first pending request of a session's call: the
// one of the given action index, or (index < -1) of any index.
func (m *Manager) pendingFor(session, callID string, index int) (approvals.Request, bool) {
	ps := m.q.Pending()
	slices.SortStableFunc(ps, func(a, b approvals.Request) int { return a.Index - b.Index })
	for _, p := range ps {
		if p.Session == session && p.CallID == callID && (index < -1 || p.Index == index) {
			return p, true
		}
	}
	return approvals.Request{}, false
}

// anyIndex makes pendingFor match any action of a call.
const anyIndex = -2

// Decide applies a human's decision to a pending approval. An approval
// that is no longer pending is ErrConflict; an unknown one ErrNotFound.
func (m *Manager) Decide(ctx context.Context, approvalID string, d Decision, by string) error {
	if err := d.check(); err != nil {
		return err
	}
	r, err := m.q.Get(approvalID)
	if err != nil {
		return m.decideErr(ctx, approvalID, err)
	}
	v, err := d.verdict(r, by)
	if err != nil {
		return err
	}
	if err := m.q.Decide(approvalID, v); err != nil {
		return m.decideErr(ctx, approvalID, err)
	}
	return nil
}

// decideErr translates the queue's errors for a client.
func (m *Manager) decideErr(ctx context.Context, id string, err error) error {
	switch {
	case errors.Is(err, approvals.ErrBadVerdict):
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	case errors.Is(err, approvals.ErrExpired):
		return fmt.Errorf("%w: approval %s expired", ErrConflict, id)
	case errors.Is(err, approvals.ErrDecided), errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%w: approval %s was already decided", ErrConflict, id)
	case !errors.Is(err, approvals.ErrNotFound):
		return err
	}
	a, serr := m.st.Approval(ctx, id)
	switch {
	case errors.Is(serr, store.ErrNotFound):
		return fmt.Errorf("approval %q: %w", id, ErrNotFound)
	case serr != nil:
		return serr
	}
	return fmt.Errorf("%w: approval %s is %s", ErrConflict, id, a.Status)
}

// permission is what a request shows: the data of permission_request and
// of a stored approval's Request.
func (m *Manager) permission(r approvals.Request) PermissionRequest {
	pr := PermissionRequest{Request: r, ToolCallID: r.CallID, ApprovalID: r.ID}
	if s, err := m.Get(r.Session); err == nil {
		s.mu.Lock()
		if name := s.shotFrames[r.Frame.ID]; name != "" {
			pr.Shot = ShotURL(s.id, name)
		}
		s.mu.Unlock()
	}
	return pr
}

// onRequest persists a new request before it is queued.
func (m *Manager) onRequest(r approvals.Request) error {
	pr := m.permission(r)
	b, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	a := store.Approval{ID: r.ID, Session: r.Session, CallID: r.CallID, Index: r.Index, Rule: r.Rule, Reason: r.Reason,
		Request: b, Status: store.ApprovalPending, Created: r.Created.UTC(), Deadline: r.Deadline.UTC()}
	if err := m.st.PutApproval(context.WithoutCancel(m.base), a); err != nil {
		return fmt.Errorf("store approval: %w", err)
	}
	return nil
}

// statusOf is how a verdict is stored, who it is recorded as given by,
// and the audit action.
func statusOf(v approvals.Verdict) (status, by, action string) {
	switch {
	case v.By == byTimeout:
		return store.ApprovalExpired, bySystem, "expire"
	case v.By == bySystem:
		return store.ApprovalExpired, bySystem, "cancel"
	case v.Kind == approvals.Approve:
		return store.ApprovalApproved, v.By, string(v.Kind)
	case v.Kind == approvals.Edit:
		return store.ApprovalEdited, v.By, string(v.Kind)
	}
	return store.ApprovalDenied, v.By, string(v.Kind)
}

// onDecision stores and audits a decision before it is taken: a decision
// that cannot be recorded is not taken.
func (m *Manager) onDecision(r approvals.Request, v approvals.Verdict) error {
	if v.Edit != nil && v.Edit.Secret {
		// A human's new text for a secret field is as secret as the
		// model's: stored, audited and shown masked. The waiter gets the
		// real one from the queue, not from here.
		e := v.Edit.Masked()
		v.Edit = &e
		if r.Verdict != nil {
			rv := *r.Verdict
			rv.Edit = &e
			r.Verdict = &rv
		}
	}
	status, by, action := statusOf(v)
	d := any(map[string]string{"reason": v.Reason})
	if by != bySystem {
		d = storedDecision{Decision: string(v.Kind), Reason: v.Reason, Edit: v.Edit}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	ctx := context.WithoutCancel(m.base)
	if _, err := m.st.Decide(ctx, r.ID, status, b, by, v.At.UTC()); err != nil {
		return err
	}
	m.audit(ctx, by, action, r.Session, r.ID, map[string]any{"request": m.permission(r), "decision": json.RawMessage(b)})
	return nil
}

// storedDecision is a human's decision as the store keeps it.
type storedDecision struct {
	Decision string          `json:"decision"`
	Reason   string          `json:"reason,omitempty"`
	Edit     *actions.Action `json:"edit,omitempty"` // in the pixels of the request's screenshot
}

// onEvent tells a request's session, once the queue has changed.
func (m *Manager) onEvent(ev approvals.Event) {
	s, err := m.Get(ev.Request.Session)
	if err != nil {
		return // not a session of this server's streams
	}
	r := ev.Request
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[r.CallID]
	switch ev.Type {
	case approvals.EventRequest:
		if c != nil && c.state != callDone {
			c.state = callPermission
		}
		s.setCallStatus(r.CallID, store.CallPermission, nil)
		pr := PermissionRequest{Request: r, ToolCallID: r.CallID, ApprovalID: r.ID}
		if name := s.shotFrames[r.Frame.ID]; name != "" {
			pr.Shot = ShotURL(s.id, name)
		}
		s.emit(EventPermissionRequest, pr)
	case approvals.EventDecision:
		v := r.Verdict
		status, by, _ := statusOf(*v)
		if c != nil && c.state == callPermission {
			c.state = callOpen
		}
		if v.Kind == approvals.Deny {
			s.denied[r.CallID] = true
		}
		s.setCallStatus(r.CallID, store.CallRunning, nil)
		s.emit(EventApprovalDecided, DecidedEvent{ApprovalID: r.ID, ToolCallID: r.CallID, Status: status, By: by,
			Reason: v.Reason})
		s.stopSent = false
	}
	s.maybeStop()
}

// restoreApprovals puts the stored pending approvals back in the queue,
// so that resumed runs re-attach to them and people can still decide
// them.
func (m *Manager) restoreApprovals(ctx context.Context) error {
	as, err := m.st.Approvals(ctx, store.ApprovalFilter{Status: store.ApprovalPending})
	if err != nil {
		return fmt.Errorf("restore approvals: %w", err)
	}
	rs := make([]approvals.Request, 0, len(as))
	for _, a := range as {
		rs = append(rs, m.pendingRequest(a))
	}
	if err := m.q.Restore(rs); err != nil {
		return fmt.Errorf("restore approvals: %w", err)
	}
	return nil
}

// pendingRequest is the queue's request of a stored pending approval, as
// it was shown when it was asked; its deadline stays.
func (m *Manager) pendingRequest(a store.Approval) approvals.Request {
	var pr PermissionRequest
	if len(a.Request) > 0 {
		if err := json.Unmarshal(a.Request, &pr); err != nil {
			m.log.Error("restore approval", "approval", a.ID, "err", err)
		}
	}
	r := pr.Request
	r.ID, r.Session, r.CallID, r.Index, r.Rule, r.Reason = a.ID, a.Session, a.CallID, a.Index, a.Rule, a.Reason
	r.Created, r.Deadline, r.Verdict = a.Created, a.Deadline, nil
	if r.Deadline.IsZero() {
		r.Deadline = time.Now() // nothing to wait for: it expires
	}
	return r
}

// sweep denies, now and then, the requests past their deadline that no
// run waits for (their session ended, or was not resumed). It returns
// when the Manager closes.
func (m *Manager) sweep(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.q.Expire()
		case <-m.base.Done():
			return
		}
	}
}

// Attach records a session whose actions run elsewhere (an MCP client's,
// kind KindMCP), so that its approvals are listed, streamed and decided
// like the others. It returns the session's id; Detach ends it.
func (m *Manager) Attach(ctx context.Context, kind, title, by string) (string, error) {
	return m.attach(ctx, RemoteSpec{Kind: kind, Title: title, By: by})
}

// attach records the session of r (AttachRemote's, without the parts
// that need its display).
func (m *Manager) attach(ctx context.Context, r RemoteSpec) (string, error) {
	id := r.ID
	if id == "" {
		var err error
		if id, err = NewID(); err != nil {
			return "", err
		}
	}
	now := time.Now().UTC()
	spec := Spec{Title: r.Title}
	cfg, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	rec := store.Session{ID: id, Kind: r.Kind, Title: r.Title, Status: store.StatusRunning, Config: cfg,
		Created: now, Updated: now, Conn: r.Conn}
	s := m.newSession(rec, spec)
	s.saved.Remote = r.State
	if rec.State, err = s.stateJSON(); err != nil {
		return "", err
	}
	s.rec.State = rec.State
	if err := m.st.CreateSession(ctx, rec); err != nil {
		return "", err
	}
	if err := m.add(s); err != nil {
		return "", err
	}
	metricCreated.WithLabelValues(r.Kind).Inc()
	m.audit(ctx, r.By, "create", id, "", map[string]any{"kind": r.Kind, "title": r.Title})
	s.emit(EventSession, map[string]string{"sessionId": id})
	return id, nil
}

// Detach ends a session that Attach recorded: its pending approvals are
// denied ("the session ended") and it is marked stopped.
func (m *Manager) Detach(ctx context.Context, id string) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	for _, p := range m.q.Pending() {
		if p.Session == id {
			err := m.q.Decide(p.ID, approvals.Verdict{Kind: approvals.Deny, By: bySystem, Reason: "the session ended"})
			if err != nil && !errors.Is(err, approvals.ErrDecided) && !errors.Is(err, approvals.ErrNotFound) {
				m.log.Error("deny the approvals of an ended session", "session", id, "approval", p.ID, "err", err)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.Status == store.StatusRunning {
		s.rec.Status = store.StatusStopped
		s.save()
		s.emit(EventTurnStop, TurnStopEvent{StopReason: StopEndTurn})
	}
	return nil
}
