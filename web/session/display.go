package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// HumanActed is the note the model gets with its first screenshot after
// an operator took over the display and acted on it.
const HumanActed = "A human operator took control of the screen and acted on it; this screenshot shows the screen as they left it."

// openDisplay opens the session's display if it is not open, at the
// session's last page.
func (s *Session) openDisplay(ctx context.Context) error {
	// dispMu serializes opening; s.mu is not held while a browser starts,
	// so that reading the session does not wait for it.
	s.dispMu.Lock()
	defer s.dispMu.Unlock()
	s.mu.Lock()
	open, url := s.disp != nil, s.rec.URL
	s.mu.Unlock()
	if open {
		return nil
	}
	d, err := s.m.cfg.NewDisplay(ctx, s.spec)
	if err != nil {
		return fmt.Errorf("open display: %w", err)
	}
	if url == "" {
		url = s.spec.StartURL
	}
	// The start page is the operator's choice, so the model's policy does
	// not govern it.
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}}); err != nil {
		_ = d.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("open %s: %w", url, err)
	}
	// The operator's input goes through the same per-action path as the
	// model's (validation, the Policy, secret fields, the record), as
	// actor operator: no approvals, since the operator is the human.
	op, err := harness.NewExecutor(harness.ExecutorConfig{Display: d, Policy: *s.spec.Policy,
		Capture: screen.CaptureOptions{Size: s.spec.image(), Format: screen.PNG},
		OnEvent: s.onOperatorEvent, Logger: s.log})
	if err != nil {
		_ = d.Close(context.WithoutCancel(ctx))
		return err
	}
	s.mu.Lock()
	s.disp = &guard{inner: d, op: op, free: closedChan()}
	s.mu.Unlock()
	return nil
}

func (s *Session) closeDisplay(ctx context.Context) error {
	s.mu.Lock()
	g := s.disp
	s.disp = nil
	s.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.inner.Close(ctx)
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// ErrNoTakeover marks input sent while the operator has not taken over.
var ErrNoTakeover = errors.New("take over the session first")

// guard stands between the loop and the display: while an operator has
// taken over, the loop's captures and actions wait; after the hand-back
// the next screenshot tells the model that a human acted.
type guard struct {
	inner Display
	op    *harness.Executor // the operator's way to the display

	mu     sync.Mutex
	active bool
	free   chan struct{} // closed while not taken over
	acted  bool          // an operator acted; the next full capture says so
	last   screen.Shot   // the latest full screenshot
	hasLst bool
}

func (g *guard) wait(ctx context.Context) error {
	g.mu.Lock()
	free := g.free
	g.mu.Unlock()
	select {
	case <-free:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (g *guard) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	if err := g.wait(ctx); err != nil {
		return screen.Shot{}, err
	}
	shot, err := g.inner.Capture(ctx, o)
	if err != nil {
		return shot, err
	}
	if o.Region.Empty() {
		g.mu.Lock()
		if g.acted {
			shot.Events = append([]string{HumanActed}, shot.Events...)
			g.acted = false
		}
		g.last, g.hasLst = shot, true
		g.mu.Unlock()
	}
	return shot, nil
}

func (g *guard) Perform(ctx context.Context, m screen.Mapped) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.inner.Perform(ctx, m)
}

func (g *guard) latest() (screen.Shot, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last, g.hasLst
}

// Takeover gives the display to an operator (active) or hands it back to
// the loop.
func (s *Session) Takeover(ctx context.Context, active bool, by string) error {
	if err := s.openDisplay(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	g := s.disp
	s.mu.Unlock()
	g.mu.Lock()
	changed := g.active != active
	if changed {
		g.active = active
		if active {
			g.free = make(chan struct{})
		} else {
			close(g.free)
		}
	}
	g.mu.Unlock()
	if changed {
		s.m.audit(ctx, by, "takeover", s.id, "", map[string]bool{"active": active})
		s.emit(EventTakeover, map[string]any{"by": by, "active": active})
	}
	return nil
}

// ErrRefused marks operator input the session's policy refuses.
var ErrRefused = errors.New("refused")

// Input performs an operator's action on the display during a takeover,
// through the one per-action path as actor operator: the session's Policy
// (hosts, files, forbidden keys, limits) applies, approvals do not, and
// text typed into a password field is recorded masked. Its coordinates
// are pixels of the latest screenshot; it answers with a fresh screenshot
// of the same size. Every input, refused or not, is audited with what was
// asked.
func (s *Session) Input(ctx context.Context, a actions.Action, by string) (screen.Shot, error) {
	s.mu.Lock()
	g := s.disp
	s.mu.Unlock()
	if g == nil {
		return screen.Shot{}, ErrNoTakeover
	}
	g.mu.Lock()
	active, last, has := g.active, g.last, g.hasLst
	g.mu.Unlock()
	if !active {
		return screen.Shot{}, ErrNoTakeover
	}
	if has && g.op.Latest().ID == "" {
		g.op.Remember([]screen.Frame{last.Frame}) // the screenshot the panel shows
	}
	id, err := newID("op")
	if err != nil {
		return screen.Shot{}, err
	}
	a.Secret = false // the executor decides
	r := g.op.Do(ctx, harness.Call{ID: id, Name: "operator", Actions: []actions.Action{a}, Space: screen.Image},
		harness.Options{Actor: harness.ActorOperator})
	detail := map[string]any{"call": id, "action": operatorAction(a)}
	if r.Err != nil {
		detail["error"] = r.Err.Error()
	}
	s.m.audit(ctx, by, "input", s.id, "", detail)
	if r.Shot != nil {
		g.mu.Lock()
		g.acted = g.acted || r.Ran > 0
		g.last, g.hasLst = *r.Shot, true
		g.mu.Unlock()
	}
	switch {
	case errors.Is(r.Err, actions.ErrNotAllowed):
		return screen.Shot{}, fmt.Errorf("%w: %v", ErrRefused, r.Err)
	case errors.Is(r.Err, screen.ErrGone):
		return screen.Shot{}, fmt.Errorf("%w: %v", ErrConflict, r.Err)
	case r.Err != nil:
		// Invalid, out of the screenshot, or not possible now (no file
		// chooser open): the operator must change the input.
		return screen.Shot{}, fmt.Errorf("%w: %v", ErrBadRequest, r.Err)
	}
	return *r.Shot, nil
}

// operatorAction is what the audit keeps of an operator's action: all of
// it but typed text, of which only the length is kept.
func operatorAction(a actions.Action) actions.Action {
	if a.Text != "" {
		a.Text = fmt.Sprintf("[%d characters]", utf8.RuneCountInString(a.Text))
	}
	return a
}

// onOperatorEvent records an operator's action in the session's history.
func (s *Session) onOperatorEvent(e trace.Event) {
	if e.Type != trace.TypeAction {
		return
	}
	ev := OperatorEvent{Action: e.Action, Error: e.Error}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendMessage("operator", ev, "")
	s.emit(EventOperatorInput, ev)
}
