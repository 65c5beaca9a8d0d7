package approvals

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// A HitTester says what lies under a point of the display, in CSS pixels
// of the viewport. screen/cdp's Display is one.
type HitTester interface {
	HitTest(ctx context.Context, p actions.Point) (screen.Target, error)
}

// A FocusReporter says which element has the keyboard focus. screen/cdp's
// Display is one.
type FocusReporter interface {
	Focused(ctx context.Context) (screen.Target, error)
}

// A DialogReporter says which JavaScript dialog is open, if any.
type DialogReporter interface {
	Dialog() (screen.Dialog, bool)
}

// NoDOMNote is how a request, and the model, are told that the rules saw
// the action only.
const NoDOMNote = "no DOM: decided on the action alone"

// GateConfig configures a Gate. Zero values are documented defaults.
type GateConfig struct {
	Queue   *Queue // required
	Rules   Rules  // the zero Rules is Default()
	Session string // the session's id, carried by its requests

	// PolicyHosts are the session's actions.Policy hosts; links and
	// navigation to them need no human.
	PolicyHosts []string

	// HitTester, when set, tells the rules what the pointer reaches; nil
	// means the display has no DOM (VNC), and the rules decide on actions,
	// regions and keys alone.
	HitTester HitTester
	// Focus tells the rules which element keyboard actions reach. Nil: the
	// HitTester, if it is a FocusReporter too; otherwise the element of the
	// last click.
	Focus FocusReporter
	// Dialogs reports the open JavaScript dialog; nil: unknown.
	Dialogs DialogReporter

	// Timeout bounds the wait for a human (zero: Rules.Timeout, or
	// DefaultTimeout). A timeout is a denial.
	Timeout time.Duration
	// InspectTimeout bounds one hit-test or focus query; default 5s.
	InspectTimeout time.Duration

	Logger *slog.Logger // nil: slog.Default()
}

// Gate is a harness.Approver: it evaluates each action with its Rules and
// sends the flagged ones to its Queue, where they wait for a human. One
// Gate serves one session; it is safe for concurrent use.
type Gate struct {
	cfg   GateConfig
	rules *compiled
	log   *slog.Logger

	mu        sync.Mutex
	cursor    *actions.Point // last pointer position, CSS px, for clicks without a point
	clicked   *screen.Target // target of the last click, for keyboard actions without a FocusReporter
	toldNoDOM bool
}

// NewGate checks cfg and returns a Gate.
func NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.Queue == nil {
		return nil, errors.New("approvals: GateConfig needs a Queue")
	}
	c, err := cfg.Rules.compile()
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	if cfg.Focus == nil {
		if f, ok := cfg.HitTester.(FocusReporter); ok {
			cfg.Focus = f
		}
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, c.Timeout)
	cfg.InspectTimeout = cmp.Or(cfg.InspectTimeout, 5*time.Second)
	return &Gate{cfg: cfg, rules: c, log: cmp.Or(cfg.Logger, slog.Default())}, nil
}

var _ harness.Approver = (*Gate)(nil)

// Approve evaluates r. An action no rule flags is approved at once. A
// flagged one waits in the Queue until a human decides, the timeout passes
// (a denial: "no decision within 5m0s"), or ctx is done. A denial is an
// error wrapping harness.ErrDenied with the reason for the model. Typing
// into a password or payment field is approved with Decision.Secret set,
// and its request shows the text masked.
func (g *Gate) Approve(ctx context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
	s, req := g.inspect(ctx, r)
	fs := g.rules.evaluate(s)
	secret := r.Action.Secret || secretTyping(s)
	if secret {
		req.Action.Secret = true
		req.Action = req.Action.Masked() // a human decides without seeing it
	}
	var notes []string
	if req.NoDOM && needsTarget(r.Action) {
		g.mu.Lock()
		if !g.toldNoDOM {
			notes = append(notes, "Approval rules cannot see this display's elements (no DOM); they decide on the action alone.")
			g.toldNoDOM = true
		}
		g.mu.Unlock()
	}
	if len(fs) == 0 {
		g.track(s)
		return harness.Decision{Notes: notes, Secret: secret}, nil
	}
	req.Rule, req.Reason, req.Findings = fs[0].Rule, fs[0].Reason, fs
	req.Created = time.Now()
	req.Deadline = req.Created.Add(g.cfg.Timeout)
	g.log.DebugContext(ctx, "approval needed", "session", g.cfg.Session, "call", r.CallID, "index", r.Index,
		"rule", req.Rule, "action", r.Action)
	// Whatever the outcome, a secret stays secret: a denied, expired or
	// abandoned password is recorded as masked as an approved one.
	refused := harness.Decision{Secret: secret}
	got, err := g.cfg.Queue.Ask(ctx, req)
	if err != nil {
		return refused, fmt.Errorf("waiting for approval (%s): %w", req.Rule, err)
	}
	v := got.Verdict
	switch {
	case v.Kind == Deny && v.By == byTimeout:
		return refused, fmt.Errorf("%w (%s: %s): %s: %w", harness.ErrDenied, got.Rule, got.Reason, v.Reason, ErrExpired)
	case v.Kind == Deny:
		return refused, fmt.Errorf("%w by a human (%s: %s): %s", harness.ErrDenied, got.Rule, got.Reason,
			cmp.Or(v.Reason, "no reason given"))
	case v.Kind == Edit:
		if v.Reason != "" {
			notes = append(notes, "The human who edited it said: "+v.Reason)
		}
		return harness.Decision{Edit: v.Edit, Notes: notes, Secret: secret}, nil
	}
	g.track(s)
	notes = append(notes, fmt.Sprintf("A human approved this action (%s).", got.Rule))
	if v.Reason != "" {
		notes = append(notes, "They said: "+v.Reason)
	}
	return harness.Decision{Notes: notes, Secret: secret}, nil
}

// secretTyping reports whether s types into a password or payment field,
// or types what looks like a card number: text that must never be shown.
func secretTyping(s Subject) bool {
	a := s.Action
	if a.Kind != actions.Type {
		return false
	}
	return s.Target != nil && (isPassword(*s.Target) || isPayment(*s.Target)) || looksLikeCard(a.Text)
}

// inspect builds the rules' Subject and the skeleton of a Request for r,
// hit-testing where the rules need it.
func (g *Gate) inspect(ctx context.Context, r harness.ApprovalRequest) (Subject, Request) {
	s := Subject{Index: r.Index, Action: r.Action, Mapped: r.Mapped, Frame: r.Frame,
		DOM: g.cfg.HitTester != nil, PolicyHosts: g.cfg.PolicyHosts, DialogKnown: g.cfg.Dialogs != nil}
	req := Request{Session: g.cfg.Session, CallID: r.CallID, Index: r.Index, Action: r.Action, Frame: r.Frame,
		Element: r.Element, SafetyChecks: r.SafetyChecks, ModelText: r.ModelText, NoDOM: r.Index >= 0 && g.cfg.HitTester == nil}
	if req.NoDOM {
		req.Note = NoDOMNote
	}
	if r.Index < 0 {
		return s, req
	}
	point, ok := g.point(r)
	if ok {
		p := point
		req.Point = &p
		m := r.Frame.FromCSS(p)
		req.Marker = &m
		s.Points = append(s.Points, m)
	}
	if r.Mapped != nil {
		for _, p := range r.Mapped.Path[min(1, len(r.Mapped.Path)):] {
			s.Points = append(s.Points, r.Frame.FromCSS(p))
		}
	}
	if g.cfg.Dialogs != nil {
		if d, open := g.cfg.Dialogs.Dialog(); open {
			s.Dialog, req.Dialog = &d, &d
		}
	}
	if g.rules.Supervise == SuperviseNone || g.cfg.HitTester == nil {
		return s, req
	}
	ictx, cancel := context.WithTimeout(ctx, g.cfg.InspectTimeout)
	defer cancel()
	switch {
	case activates(r.Action) && ok:
		t, err := g.cfg.HitTester.HitTest(ictx, point)
		s.Target, s.TargetErr = &t, err
		if err != nil {
			s.Target = nil
		}
	case keyboard(r.Action) && g.cfg.Focus != nil:
		t, err := g.cfg.Focus.Focused(ictx)
		s.Target, s.TargetErr = &t, err
		if err != nil {
			s.Target = nil
		}
	case keyboard(r.Action):
		g.mu.Lock()
		s.Target = g.clicked
		g.mu.Unlock()
	}
	if s.Target != nil && *s.Target == (screen.Target{}) {
		s.Target = nil // nothing there
	}
	req.Target = s.Target
	return s, req
}

// point returns where r's action lands in CSS pixels: its own point, a
// drag's start, or the pointer's last position.
func (g *Gate) point(r harness.ApprovalRequest) (actions.Point, bool) {
	m := r.Mapped
	switch {
	case m == nil || !r.Action.Kind.IsPointer():
		return actions.Point{}, false
	case len(m.Path) > 0:
		return m.Path[0], true
	case m.HasAt:
		return m.At, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cursor != nil {
		return *g.cursor, true
	}
	return actions.Point{}, false
}

// track remembers where an approved action left the pointer, and what a
// click reached.
func (g *Gate) track(s Subject) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := s.Mapped; m != nil && s.Action.Kind.IsPointer() {
		switch {
		case len(m.Path) > 0:
			p := m.Path[len(m.Path)-1]
			g.cursor = &p
		case m.HasAt:
			p := m.At
			g.cursor = &p
		}
	}
	if activates(s.Action) && s.Target != nil {
		t := *s.Target
		g.clicked = &t
	}
}
