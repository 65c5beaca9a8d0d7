package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/store"
)

// HumanActed is the note the model gets with its first screenshot after
// an operator took over the display and acted on it.
const HumanActed = "A human operator took control of the screen and acted on it; this screenshot shows the screen as they left it."

// openDisplay opens the session's display if it is not open, at the
// session's last page. The session takes a place under MaxSessions first
// unless it holds one (a session restored after a restart is let in past
// the bound).
func (s *Session) openDisplay(ctx context.Context) error {
	// dispMu serializes opening; s.mu is not held while a browser starts,
	// so that reading the session does not wait for it.
	s.dispMu.Lock()
	defer s.dispMu.Unlock()
	s.mu.Lock()
	open, slot, force, stopped := s.disp != nil, s.slot, s.restored, s.rec.Status == store.StatusStopped
	s.mu.Unlock()
	switch {
	case open:
		return nil
	case stopped:
		return fmt.Errorf("%w: the session is stopped", ErrConflict)
	}
	if !slot {
		if err := s.m.acquire(force); err != nil {
			return err
		}
		s.mu.Lock()
		s.slot, s.restored = true, false
		s.mu.Unlock()
	}
	d, err := s.launch(ctx)
	if err != nil {
		s.giveBack()
		return err
	}
	g := &guard{s: s, inner: d, free: closedChan()}
	s.mu.Lock()
	g.seq = s.saved.FrameSeq
	if t := s.saved.Takeover; t != nil {
		// An operator had the display when the server stopped: the loop
		// still waits for the hand-back.
		g.active, g.acted, g.free = true, t.Acted, make(chan struct{})
	}
	g.note, s.relaunch = s.relaunch, ""
	s.mu.Unlock()
	// The operator's input goes through the same per-action path as the
	// model's (validation, the Policy, secret fields, the record), as
	// actor operator: no approvals, since the operator is the human. It
	// acts on whichever display is current, without waiting for itself.
	op, err := harness.NewExecutor(harness.ExecutorConfig{Display: operatorView{g}, Policy: *s.spec.Policy,
		Capture: screen.CaptureOptions{Size: s.spec.image(), Format: screen.PNG}, Inspector: inspector(g.dom()),
		OnEvent: s.onOperatorEvent, Logger: s.log})
	if err != nil {
		_ = d.Close(context.WithoutCancel(ctx))
		s.giveBack()
		return err
	}
	g.op = op
	s.mu.Lock()
	s.disp = g
	s.mu.Unlock()
	s.live.displayChanged()
	return nil
}

// launch opens a display at the session's last page (its start page at
// first).
func (s *Session) launch(ctx context.Context) (Display, error) {
	s.mu.Lock()
	url := s.rec.URL
	s.mu.Unlock()
	if url == "" {
		url = s.spec.StartURL
	}
	d, err := s.m.cfg.NewDisplay(ctx, s.spec)
	if err != nil {
		return nil, fmt.Errorf("open display: %w", err)
	}
	if !s.spec.Display.Browser() {
		return d, nil // a desktop has no page to open
	}
	// The start page is the operator's choice, so the model's policy does
	// not govern it.
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}}); err != nil {
		_ = d.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open %s: %w", url, err)
	}
	// The page is drawn before any input reaches it: a browser that has
	// not drawn a frame of the page since it loaded drops a click at a
	// point (screen/cdp's FrameControl), and a run resumed after a
	// restart acts before it captures anything.
	if _, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 64, H: 40}}); err != nil {
		_ = d.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("draw %s: %w", url, err)
	}
	return d, nil
}

// giveBack returns the session's place under MaxSessions, if it holds
// one.
func (s *Session) giveBack() {
	s.mu.Lock()
	slot := s.slot
	s.slot = false
	s.mu.Unlock()
	if slot {
		s.m.release()
	}
}

// closeDisplay closes the session's display and gives its place under
// MaxSessions back.
func (s *Session) closeDisplay(ctx context.Context) error {
	s.mu.Lock()
	g := s.disp
	s.disp = nil
	s.mu.Unlock()
	s.live.displayChanged()
	defer s.giveBack()
	if g == nil {
		return nil
	}
	return g.close(ctx)
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// ErrNoTakeover marks input sent while the operator has not taken over.
var ErrNoTakeover = errors.New("take over the session first")

// Relaunches of a session's display after its browser died: at most
// maxRelaunches within relaunchWindow, so that a page that kills every
// browser it is opened in does not keep the server starting browsers.
const (
	maxRelaunches  = 3
	relaunchWindow = 10 * time.Minute
)

// guard stands between the loop and the display: while an operator has
// taken over, the loop's captures and actions wait; after the hand-back
// the next screenshot tells the model that a human acted. When the
// browser dies (an error wrapping screen.ErrGone: a crash, a killed
// process), the guard closes what is left of it and opens a new display at
// the session's last page: a Perform that died returns an error that says
// so (and does not wrap screen.ErrGone, so the run goes on); a Capture
// returns the new display's screenshot with a note.
type guard struct {
	s      *Session
	relMu  sync.Mutex // one relaunch (or close) at a time
	takeMu sync.Mutex // one Takeover at a time

	mu         sync.Mutex
	inner      Display           // the current display
	closed     bool              // closed: no relaunch
	relaunches []time.Time       // within relaunchWindow
	op         *harness.Executor // the operator's way to the display
	active     bool
	free       chan struct{} // closed while not taken over
	acted      bool          // an operator acted; the next full capture says so
	note       string        // said with the next full capture (a relaunch at a restart)
	last       screen.Shot   // the latest full screenshot
	hasLst     bool
	// seq numbers the session's frames: a display started anew (here,
	// by the runner's restarts, after a server restart) numbers its own
	// from 1 again, and a frame id must name one screenshot, in the
	// executor's memory and in the trace's files.
	seq int
}

// frameSeq returns the number of the session's latest frame.
func (g *guard) frameSeq() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seq
}

// current returns the display the guard drives now.
func (g *guard) current() Display {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inner
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
	return g.capture(ctx, o, true)
}

// capture captures the current display, relaunching it if it died; the
// loop's full captures (loop) carry the notes the model must read.
func (g *guard) capture(ctx context.Context, o screen.CaptureOptions, loop bool) (screen.Shot, error) {
	d := g.current()
	shot, err := d.Capture(ctx, o)
	var note string
	if err != nil {
		var rerr error
		if note, rerr = g.relaunch(ctx, d, err); rerr != nil {
			return screen.Shot{}, rerr
		}
		if shot, err = g.current().Capture(ctx, o); err != nil {
			return screen.Shot{}, fmt.Errorf("capture after the browser was started anew: %w", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	shot.Frame.ID = fmt.Sprintf("f%04d", g.seq)
	if !o.Region.Empty() {
		return shot, nil
	}
	if loop && g.acted {
		shot.Events = append([]string{HumanActed}, shot.Events...)
		g.acted = false
	}
	if loop && g.note != "" {
		shot.Events = append(shot.Events, g.note)
		g.note = ""
	}
	if note != "" {
		shot.Events = append(shot.Events, note)
	}
	g.last, g.hasLst = shot, true
	g.s.live.offer(liveShot(shot))
	return shot, nil
}

func (g *guard) Perform(ctx context.Context, m screen.Mapped) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.perform(ctx, m)
}

func (g *guard) perform(ctx context.Context, m screen.Mapped) error {
	d := g.current()
	err := d.Perform(ctx, m)
	if err == nil {
		return nil
	}
	note, rerr := g.relaunch(ctx, d, err)
	if rerr != nil {
		return rerr
	}
	if note == "" { // another call relaunched it meanwhile
		note = "The browser died and was started anew at the session's last page."
		if !g.s.spec.Display.Browser() {
			note = "The display died and was started anew."
		}
	}
	return errors.New("this action did not complete: " + note)
}

// relaunch opens a new display in place of dead when err says it died,
// and returns a note for the model. It returns err when the display did
// not die, may not be relaunched (closed, too many relaunches, ctx done)
// or could not be. When another call relaunched dead already, it returns
// no note and no error: use the current display.
func (g *guard) relaunch(ctx context.Context, dead Display, err error) (string, error) {
	if !errors.Is(err, screen.ErrGone) || ctx.Err() != nil {
		return "", err
	}
	g.relMu.Lock()
	defer g.relMu.Unlock()
	g.mu.Lock()
	replaced, closed := g.inner != dead, g.closed
	now := time.Now()
	g.relaunches = slices.DeleteFunc(g.relaunches, func(t time.Time) bool { return now.Sub(t) > relaunchWindow })
	tooMany := len(g.relaunches) >= maxRelaunches
	g.mu.Unlock()
	switch {
	case replaced:
		return "", nil
	case closed:
		return "", err
	case tooMany:
		wiring.Relaunched(wiring.RelaunchRefused)
		g.s.log.WarnContext(ctx, "display died again; not relaunched", "relaunches", maxRelaunches, "within", relaunchWindow, "err", err)
		return "", fmt.Errorf("%w (the browser was started anew %d times in %v already)", err, maxRelaunches, relaunchWindow)
	}
	if cerr := dead.Close(context.WithoutCancel(ctx)); cerr != nil {
		g.s.log.WarnContext(ctx, "close a dead display", "err", cerr)
	}
	d, lerr := g.s.launch(ctx)
	if lerr != nil {
		wiring.Relaunched(wiring.RelaunchFailed)
		g.s.log.ErrorContext(ctx, "relaunch a dead display", "err", lerr, "cause", err)
		return "", fmt.Errorf("%w; starting the browser anew failed", err)
	}
	g.mu.Lock()
	g.inner = d
	g.relaunches = append(g.relaunches, now)
	g.mu.Unlock()
	wiring.Relaunched(wiring.RelaunchOK)
	g.s.live.displayChanged()
	url := g.s.Record().URL
	if url == "" {
		url = g.s.spec.StartURL
	}
	g.s.log.WarnContext(ctx, "display relaunched", "cause", err, "url", url)
	if !g.s.spec.Display.Browser() {
		return fmt.Sprintf("The %s display died (%s). A fresh one was started; whatever was open on the old one is gone.",
			g.s.spec.Display.Backend, g.s.m.scrub(err.Error())), nil
	}
	return fmt.Sprintf("The browser died (%s). It was started anew at %s; the page was loaded afresh, so anything not saved by the site is lost.",
		g.s.m.scrub(err.Error()), url), nil
}

// close closes the current display; the guard relaunches nothing after it.
func (g *guard) close(ctx context.Context) error {
	g.relMu.Lock() // after a relaunch in progress
	defer g.relMu.Unlock()
	g.mu.Lock()
	g.closed = true
	d := g.inner
	g.mu.Unlock()
	return d.Close(ctx)
}

func (g *guard) latest() (screen.Shot, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last, g.hasLst
}

// dom returns what inspects the current display's page for the approval
// rules and the secret decisions: a value with the DOM methods the
// display has (harness.Inspector, approvals.DialogReporter), or nil for a
// display without a DOM.
func (g *guard) dom() any {
	d := g.current()
	_, insp := d.(harness.Inspector)
	_, dlg := d.(approvals.DialogReporter)
	switch {
	case insp && dlg:
		return domView{inspectView{g}, dialogView{g}}
	case insp:
		return inspectView{g}
	case dlg:
		return dialogView{g}
	}
	return nil
}

// inspectView hit-tests the guard's current display.
type inspectView struct{ g *guard }

func (v inspectView) HitTest(ctx context.Context, p actions.Point) (screen.Target, error) {
	in, ok := v.g.current().(harness.Inspector)
	if !ok {
		return screen.Target{}, screen.ErrUnsupported
	}
	return in.HitTest(ctx, p)
}

func (v inspectView) Focused(ctx context.Context) (screen.Target, error) {
	in, ok := v.g.current().(harness.Inspector)
	if !ok {
		return screen.Target{}, screen.ErrUnsupported
	}
	return in.Focused(ctx)
}

// dialogView reports the dialogs of the guard's current display.
type dialogView struct{ g *guard }

func (v dialogView) Dialog() (screen.Dialog, bool) {
	if dr, ok := v.g.current().(approvals.DialogReporter); ok {
		return dr.Dialog()
	}
	return screen.Dialog{}, false
}

type domView struct {
	inspectView
	dialogView
}

// operatorView is the display as the operator's executor sees it: the
// current one, relaunched if it died, without waiting for the takeover
// (the operator is the one who took over).
type operatorView struct{ g *guard }

func (v operatorView) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	return v.g.capture(ctx, o, false)
}

func (v operatorView) Perform(ctx context.Context, m screen.Mapped) error { return v.g.perform(ctx, m) }

// Takeover gives the display to an operator (active) or hands it back to
// the loop. Its event is stored and handed to the session's streams
// before a turn waiting for the hand-back goes on, so that the hand-back
// comes before what the turn does next, in the stream and in the store.
func (s *Session) Takeover(ctx context.Context, active bool, by string) error {
	if err := s.openDisplay(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	g := s.disp
	s.mu.Unlock()
	g.takeMu.Lock() // one change of hands at a time
	defer g.takeMu.Unlock()
	g.mu.Lock()
	changed := g.active != active
	if changed && active {
		g.active = true
		g.free = make(chan struct{})
	}
	g.mu.Unlock()
	if !changed {
		return nil
	}
	// Kept across a restart: a turn resumed then still waits for the
	// hand-back.
	s.mu.Lock()
	s.saved.Takeover = nil
	if active {
		s.saved.Takeover = &savedTakeover{By: by}
	}
	s.save()
	s.mu.Unlock()
	s.m.audit(ctx, by, "takeover", s.id, "", map[string]bool{"active": active})
	s.emit(EventTakeover, map[string]any{"by": by, "active": active})
	if !active {
		g.mu.Lock()
		g.active = false
		close(g.free)
		g.mu.Unlock()
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
	g, taken := s.disp, s.saved.Takeover != nil
	s.mu.Unlock()
	if g == nil && taken {
		// Taken over before a restart, and not open since.
		if err := s.openDisplay(ctx); err != nil {
			return screen.Shot{}, err
		}
		s.mu.Lock()
		g = s.disp
		s.mu.Unlock()
	}
	if g == nil {
		return screen.Shot{}, ErrNoTakeover
	}
	g.mu.Lock()
	active, last, has := g.active, g.last, g.hasLst
	g.mu.Unlock()
	if !active {
		return screen.Shot{}, ErrNoTakeover
	}
	switch {
	case g.op.Latest().ID != "":
	case has:
		g.op.Remember([]screen.Frame{last.Frame}) // the screenshot the panel shows
	default:
		// Nothing captured since the display opened (a takeover that
		// outlived a restart): the points are in the space of the
		// session's screenshots, which a fresh one has too.
		shot, _, err := g.op.Screenshot(ctx, harness.ActorOperator)
		if err != nil {
			return screen.Shot{}, fmt.Errorf("%w: %v", ErrConflict, err)
		}
		g.mu.Lock()
		g.last, g.hasLst = shot, true
		g.mu.Unlock()
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
		acted := g.acted
		g.mu.Unlock()
		s.mu.Lock()
		if t := s.saved.Takeover; t != nil && acted && !t.Acted {
			t.Acted = true
			s.save()
		}
		s.mu.Unlock()
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
