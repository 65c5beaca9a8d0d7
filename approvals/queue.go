package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrNotFound marks a request id the queue does not know.
	ErrNotFound = errors.New("approval request not found")
	// ErrDecided marks a request that has already been decided.
	ErrDecided = errors.New("approval request already decided")
	// ErrExpired marks a request that nobody decided in time; it counts
	// as a denial.
	ErrExpired = errors.New("approval request expired")
	// ErrBadVerdict marks a verdict that does not fit its request.
	ErrBadVerdict = errors.New("bad verdict")
)

// Request is one action (or one call's safety checks) waiting for a human:
// everything an approval panel shows. It is plain data.
type Request struct {
	ID      string `json:"id"`
	Session string `json:"session,omitempty"`
	CallID  string `json:"callId"`
	Index   int    `json:"index"` // in the call's batch; -1 for the call's safety checks

	Rule     string    `json:"rule"`   // the first rule that flagged it
	Reason   string    `json:"reason"` // that rule's reason, for a human
	Findings []Finding `json:"findings,omitempty"`

	// Action is in model coordinates. A call's safety checks (Index -1)
	// have none: the zero Action, which JSON leaves out ("action" is
	// absent) and reads back as the zero Action.
	Action actions.Action `json:"action,omitzero"`
	// Point is where the action lands in CSS pixels of the viewport, and
	// Marker the same place in pixels of the frame's image (what the
	// panel marks on the screenshot). Nil for actions without a point.
	Point  *actions.Point `json:"point,omitempty"`
	Marker *actions.Point `json:"marker,omitempty"`
	// Element frames, in pixels of the frame's image, the element that
	// the action named by its reference (an MCP client's {"ref": "e3"});
	// nil for an action in pixels.
	Element *actions.Rect `json:"element,omitempty"`
	// Target is the element the action reaches (nil without a DOM or
	// without a target), Dialog the dialog open on the page.
	Target *screen.Target `json:"target,omitempty"`
	Dialog *screen.Dialog `json:"dialog,omitempty"`
	// NoDOM is set when the display could not be hit-tested; Note then
	// says "no DOM: decided on the action alone".
	NoDOM bool   `json:"noDom,omitempty"`
	Note  string `json:"note,omitempty"`

	Frame        screen.Frame          `json:"frame"` // the screenshot the model saw (id, URL, geometry)
	SafetyChecks []harness.SafetyCheck `json:"safetyChecks,omitempty"`
	ModelText    string                `json:"modelText,omitempty"`

	Created  time.Time `json:"created"`
	Deadline time.Time `json:"deadline"`

	// Verdict is the decision, once there is one.
	Verdict *Verdict `json:"verdict,omitempty"`
}

// VerdictKind is what a human decided.
type VerdictKind string

const (
	Approve VerdictKind = "approve"
	Deny    VerdictKind = "deny"
	Edit    VerdictKind = "edit" // approve a changed action
)

// Verdict is a human's decision on a Request.
type Verdict struct {
	Kind VerdictKind `json:"kind"`
	// Reason is shown to the model with a denial, and recorded with every
	// verdict.
	Reason string `json:"reason,omitempty"`
	// Edit replaces the action for Kind Edit. Its coordinates are pixels
	// of the request's frame image, as the panel shows it.
	Edit *actions.Action `json:"edit,omitempty"`
	// By names who decided: an operator, or "timeout".
	By string `json:"by"`
	// At is when the verdict was given; Decide sets it.
	At time.Time `json:"at"`
}

// byTimeout is Verdict.By of a request nobody decided in time.
const byTimeout = "timeout"

// EventType says what happened to a request.
type EventType string

const (
	EventRequest  EventType = "request"  // a request is waiting
	EventDecision EventType = "decision" // a request was decided (Request.Verdict says how)
)

// Event is a change to the queue, as subscribers see it.
type Event struct {
	Type    EventType `json:"type"`
	Request Request   `json:"request"`
}

// QueueConfig configures a Queue. Every hook is optional. Hooks are called
// synchronously and one at a time, in the order of the changes, and may
// read the queue (Pending, Get) but must not change it.
//
// OnRequest and OnDecision run before their change takes effect; an error
// from either cancels the change (a request that cannot be recorded is not
// asked; a decision that cannot be audited is not taken). OnEvent runs
// after it: a request is in the queue when OnEvent sees it, so whoever it
// tells can decide it at once, and the asker of a decided request is woken
// only after OnEvent returns, so that what OnEvent tells comes first.
type QueueConfig struct {
	// OnRequest sees every new request, to persist it.
	OnRequest func(Request) error
	// OnDecision sees every decision with the request as the human saw
	// it: who decided, when, and what, for the audit log.
	OnDecision func(Request, Verdict) error
	// OnEvent sees every change once it has taken effect, to notify
	// people: a new request (not a restored one), or a decision.
	OnEvent func(Event)
}

// Queue holds the requests that wait for a human. It is safe for
// concurrent use. A request stays pending until it is decided or expires,
// even when the asker has gone (a canceled context): a later Ask for the
// same session, call id and index attaches to it again, or gets the
// verdict given meanwhile.
type Queue struct {
	cfg    QueueConfig
	hookMu sync.Mutex // serializes hooks with the changes they precede

	mu        sync.Mutex
	pending   map[string]*entry
	byKey     map[key]string  // pending request id by (session, call, index)
	unclaimed map[key]Request // decided while nobody waited
	decided   map[string]bool // ids decided, for ErrDecided
	order     []string        // decided ids, oldest first, to bound decided
	subs      map[*subscriber]struct{}
}

type key struct {
	session, call string
	index         int
}

func keyOf(r Request) key { return key{r.Session, r.CallID, r.Index} }

type entry struct {
	req  Request
	done chan struct{} // closed when req.Verdict is set
}

type subscriber struct{ ch chan Event }

// maxDecided bounds the memory of decided ids and unclaimed verdicts.
const maxDecided = 4096

// subscriberBuffer is how many events a subscriber may fall behind.
const subscriberBuffer = 64

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	return &Queue{
		cfg:       cfg,
		pending:   map[string]*entry{},
		byKey:     map[key]string{},
		unclaimed: map[key]Request{},
		decided:   map[string]bool{},
		subs:      map[*subscriber]struct{}{},
	}
}

// Pending returns the requests waiting for a decision, oldest first. A
// request past its deadline is no longer listed: it is denied when its
// asker comes back, when someone tries to decide it, or by Expire.
func (q *Queue) Pending() []Request {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	rs := make([]Request, 0, len(q.pending))
	for _, e := range q.pending {
		if now.Before(e.req.Deadline) {
			rs = append(rs, e.req)
		}
	}
	slices.SortFunc(rs, func(a, b Request) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	return rs
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Get returns the pending request id. A decided or unknown id is an error
// wrapping ErrDecided or ErrNotFound.
func (q *Queue) Get(id string) (Request, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.pending[id]; ok {
		return e.req, nil
	}
	if q.decided[id] {
		return Request{}, fmt.Errorf("%s: %w", id, ErrDecided)
	}
	return Request{}, fmt.Errorf("%s: %w", id, ErrNotFound)
}

// Decide records v for the pending request id and wakes its asker. It
// fails with ErrNotFound for an unknown id, ErrDecided for one already
// decided, ErrExpired for one past its deadline (which it then denies),
// ErrBadVerdict for a verdict that does not fit (an edit without an
// action, an edit of safety checks, no By), or the OnDecision hook's
// error.
func (q *Queue) Decide(id string, v Verdict) error {
	switch v.Kind {
	case Approve, Deny:
		if v.Edit != nil {
			return fmt.Errorf("%w: only an edit carries an action", ErrBadVerdict)
		}
	case Edit:
		if v.Edit == nil {
			return fmt.Errorf("%w: an edit needs the changed action", ErrBadVerdict)
		}
	default:
		return fmt.Errorf("%w: kind %q (want approve, deny or edit)", ErrBadVerdict, v.Kind)
	}
	if v.By == "" {
		return fmt.Errorf("%w: a verdict names who gave it (By)", ErrBadVerdict)
	}
	q.hookMu.Lock()
	defer q.hookMu.Unlock()
	r, err := q.Get(id)
	if err != nil {
		return err
	}
	if v.Kind == Edit {
		if err := checkEdit(r, *v.Edit); err != nil {
			return err
		}
	}
	now := time.Now()
	if !now.Before(r.Deadline) {
		if err := q.expireLocked(r, now); err != nil {
			return err
		}
		return fmt.Errorf("%s: %w", id, ErrExpired)
	}
	v.At = now
	return q.settleLocked(r, v)
}

// Expire denies, as a timeout, every pending request past its deadline,
// and returns how many it denied. Requests whose asker waits expire by
// themselves; a server calls Expire now and then for those whose asker
// has gone (a session that ended while a request was pending).
func (q *Queue) Expire() int {
	q.mu.Lock()
	now := time.Now()
	var ids []string
	for id, e := range q.pending {
		if !now.Before(e.req.Deadline) {
			ids = append(ids, id)
		}
	}
	q.mu.Unlock()
	for _, id := range ids {
		q.expire(id)
	}
	return len(ids)
}

// expireLocked denies r for want of a decision. q.hookMu must be held.
func (q *Queue) expireLocked(r Request, now time.Time) error {
	return q.settleLocked(r, Verdict{Kind: Deny, By: byTimeout, At: now,
		Reason: fmt.Sprintf("no decision within %v", r.Deadline.Sub(r.Created).Round(time.Second))})
}

// settleLocked audits v and applies it to the pending request r.
// q.hookMu must be held.
func (q *Queue) settleLocked(r Request, v Verdict) error {
	r.Verdict = &v
	if q.cfg.OnDecision != nil {
		if err := q.cfg.OnDecision(r, v); err != nil {
			return fmt.Errorf("audit decision on %s: %w", r.ID, err)
		}
	}
	q.mu.Lock()
	e, ok := q.pending[r.ID]
	if !ok {
		q.mu.Unlock()
		return fmt.Errorf("%s: %w", r.ID, ErrDecided) // unreachable while hookMu is held
	}
	e.req = r
	delete(q.pending, r.ID)
	delete(q.byKey, keyOf(r))
	metricPending.remove(e)
	observeDecision(r, v)
	q.rememberLocked(r)
	ev := Event{Type: EventDecision, Request: r}
	q.publishLocked(ev)
	q.mu.Unlock()
	if q.cfg.OnEvent != nil {
		q.cfg.OnEvent(ev)
	}
	close(e.done) // the asker wakes after OnEvent
	return nil
}

// rememberLocked keeps r's verdict for an asker that comes back, and its
// id for ErrDecided, within maxDecided.
func (q *Queue) rememberLocked(r Request) {
	q.decided[r.ID] = true
	q.unclaimed[keyOf(r)] = r
	q.order = append(q.order, r.ID)
	for len(q.order) > maxDecided {
		delete(q.decided, q.order[0])
		q.order = q.order[1:]
	}
	if len(q.unclaimed) > maxDecided {
		oldest := key{}
		var at time.Time
		for k, u := range q.unclaimed {
			if at.IsZero() || u.Verdict.At.Before(at) {
				oldest, at = k, u.Verdict.At
			}
		}
		delete(q.unclaimed, oldest)
	}
}

// Ask puts r into the queue and blocks until a human decides, r's
// Deadline passes (a denial by "timeout"), or ctx is done (r stays
// pending). If a request with r's session, call id and index is pending,
// Ask waits for that one instead; if one was decided while nobody waited,
// Ask returns its verdict at once. Ask sets r's ID and Created if they
// are empty; r needs a Deadline. The returned Request is the one decided.
//
// The wait is a span of its own (SpanWait), with the rule that asked and
// the verdict.
func (q *Queue) Ask(ctx context.Context, r Request) (got Request, err error) {
	if r.Deadline.IsZero() {
		return Request{}, errors.New("ask: the request has no deadline")
	}
	e, snap, err := q.attach(r)
	if err != nil {
		return Request{}, err
	}
	if snap.Verdict != nil { // decided before: an unclaimed verdict
		return snap, nil
	}
	_, span := tracer.Start(ctx, SpanWait, trace.WithAttributes(attribute.String("spotter.approval.id", snap.ID),
		attribute.String("spotter.approval.rule", snap.Rule)))
	defer func() {
		if got.Verdict != nil {
			span.SetAttributes(attribute.String("spotter.approval.verdict", string(got.Verdict.Kind)),
				attribute.Bool("spotter.approval.expired", got.Verdict.By == byTimeout))
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	t := time.NewTimer(max(time.Until(snap.Deadline), 0))
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
		q.expire(snap.ID)
		<-e.done // expired by this call, or decided just before
	case <-ctx.Done():
		return Request{}, context.Cause(ctx)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.unclaimed, keyOf(e.req)) // claimed
	return e.req, nil
}

// checkEdit reports whether an edited action fits request r: a valid
// action whose coordinates lie in the image of r's frame.
func checkEdit(r Request, a actions.Action) error {
	if r.Index < 0 {
		return fmt.Errorf("%w: safety checks can be approved or denied, not edited", ErrBadVerdict)
	}
	if err := a.Validate(actions.Limits{}); err != nil {
		return fmt.Errorf("%w: the edited action: %w", ErrBadVerdict, err)
	}
	if !r.Frame.Sent.Empty() {
		if _, err := r.Frame.Map(a, screen.Image); err != nil {
			return fmt.Errorf("%w: the edited action: %w", ErrBadVerdict, err)
		}
	}
	return nil
}

// expire denies the pending request id for want of a decision, unless it
// was decided meanwhile. A failing audit hook leaves it pending until the
// next try; expire then tries without the hook.
func (q *Queue) expire(id string) {
	q.hookMu.Lock()
	defer q.hookMu.Unlock()
	r, err := q.Get(id)
	if err != nil {
		return // decided meanwhile
	}
	if q.expireLocked(r, time.Now()) != nil {
		// The audit failed; the asker must still get its denial.
		hook := q.cfg.OnDecision
		q.cfg.OnDecision = nil
		_ = q.expireLocked(r, time.Now())
		q.cfg.OnDecision = hook
	}
}

// attach finds or makes the entry for r, and returns it with a copy of
// its request as it is now.
func (q *Queue) attach(r Request) (*entry, Request, error) {
	q.hookMu.Lock()
	defer q.hookMu.Unlock()
	k := keyOf(r)
	q.mu.Lock()
	if u, ok := q.unclaimed[k]; ok {
		delete(q.unclaimed, k) // claimed
		q.mu.Unlock()
		return nil, u, nil
	}
	if id, ok := q.byKey[k]; ok {
		e := q.pending[id]
		snap := e.req
		q.mu.Unlock()
		return e, snap, nil
	}
	q.mu.Unlock()
	if r.ID == "" {
		r.ID = newID()
	}
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	r.Verdict = nil
	if q.cfg.OnRequest != nil {
		if err := q.cfg.OnRequest(r); err != nil {
			return nil, Request{}, fmt.Errorf("record approval request: %w", err)
		}
	}
	e := &entry{req: r, done: make(chan struct{})}
	q.mu.Lock()
	if _, dup := q.pending[r.ID]; dup {
		q.mu.Unlock()
		return nil, Request{}, fmt.Errorf("ask: request id %s is already pending", r.ID)
	}
	q.pending[r.ID] = e
	q.byKey[k] = r.ID
	metricPending.add(e, r.Created)
	ev := Event{Type: EventRequest, Request: r}
	q.publishLocked(ev)
	q.mu.Unlock()
	// Persisted, then in the queue, then announced: whoever is told can
	// decide it at once.
	if q.cfg.OnEvent != nil {
		q.cfg.OnEvent(ev)
	}
	return e, r, nil
}

// Restore puts back requests saved before a restart, without calling the
// hooks: pending ones (no Verdict) wait again for a decision and for their
// asker; decided ones wait for their asker to collect the verdict. A
// request without an ID or Deadline, or with an ID or key already in the
// queue, is an error, and nothing is restored.
func (q *Queue) Restore(rs []Request) error {
	q.hookMu.Lock()
	defer q.hookMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	seen := map[string]bool{}
	keys := map[key]bool{}
	for i, r := range rs {
		switch {
		case r.ID == "" || r.Deadline.IsZero():
			return fmt.Errorf("restore: request %d needs an id and a deadline", i)
		case seen[r.ID] || q.pending[r.ID] != nil || q.decided[r.ID]:
			return fmt.Errorf("restore: request id %s is already in the queue", r.ID)
		case keys[keyOf(r)] || q.byKey[keyOf(r)] != "":
			return fmt.Errorf("restore: request %s: session %q, call %q, index %d already has a request", r.ID, r.Session, r.CallID, r.Index)
		}
		seen[r.ID], keys[keyOf(r)] = true, true
	}
	for _, r := range rs {
		if r.Verdict != nil {
			q.rememberLocked(r)
			continue
		}
		e := &entry{req: r, done: make(chan struct{})}
		q.pending[r.ID] = e
		q.byKey[keyOf(r)] = r.ID
		metricPending.add(e, r.Created)
	}
	return nil
}

// Subscribe returns a channel of the queue's events. The channel is closed
// when ctx is done, or when the subscriber has fallen 64 events behind
// (it should then read Pending and subscribe again). Sending never blocks
// the queue.
func (q *Queue) Subscribe(ctx context.Context) <-chan Event {
	s := &subscriber{ch: make(chan Event, subscriberBuffer)}
	q.mu.Lock()
	q.subs[s] = struct{}{}
	q.mu.Unlock()
	context.AfterFunc(ctx, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if _, ok := q.subs[s]; ok {
			delete(q.subs, s)
			close(s.ch)
		}
	})
	return s.ch
}

func (q *Queue) publishLocked(ev Event) {
	for s := range q.subs {
		select {
		case s.ch <- ev:
		default:
			delete(q.subs, s)
			close(s.ch)
		}
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "ap_" + hex.EncodeToString(b[:])
}
