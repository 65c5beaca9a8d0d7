package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// Actor says who proposed a call. The Policy applies to every actor;
// approvals to all but the operator, who is the human.
type Actor string

const (
	ActorModel    Actor = "model"    // the run's model
	ActorClient   Actor = "client"   // an executor API or MCP client's own model
	ActorOperator Actor = "operator" // a human acting during a takeover
	ActorReplay   Actor = "replay"   // a recorded run played back
)

type actorKey struct{}

// WithActor returns ctx carrying a. The Executor sets it on the contexts it
// hands the Display, so that a display wrapper can tell an operator's
// input from the model's.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries, or ActorModel.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return ActorModel
}

// An Inspector says what typing reaches: the element under a point, and
// the focused element. screen/cdp's Display is one; displays without a
// DOM are not, and their typed text is secret only by placeholder or
// card number.
type Inspector interface {
	HitTest(ctx context.Context, p actions.Point) (screen.Target, error)
	Focused(ctx context.Context) (screen.Target, error)
}

// ExecutorConfig configures an Executor. Zero values are documented
// defaults; the fields mean what Config's fields of the same names mean.
type ExecutorConfig struct {
	Display Display // required

	Policy      actions.Policy
	Limits      actions.Limits
	Capture     screen.CaptureOptions
	ZoomMax     int
	RejectStale bool
	// ActionTimeout bounds one action, plus its own duration; default 15s.
	ActionTimeout time.Duration

	// Approver is asked before each action of every actor but the
	// operator, and for every provider safety check. Nil: actions run once
	// the Policy allows them, and safety checks are denied.
	Approver Approver
	// Inspector tells whether typed text is secret before it is recorded.
	// Nil: the Display, if it is an Inspector.
	Inspector Inspector
	// Referencer resolves element references (an MCP client's
	// {"ref": "e3"}) and takes snapshots. Nil: the Display, if it is a
	// Referencer.
	Referencer Referencer
	// InspectTimeout bounds one hit-test or focus query; default 3s.
	InspectTimeout time.Duration

	Secrets map[string]string // {{NAME}} placeholders

	Trace   *trace.Writer     // nil: no trace files
	OnEvent func(trace.Event) // sees every event after the trace has it; must not block for long

	// OnIntent, when set, is called before a call's first action that
	// acts on the display (every kind but screenshot, wait, zoom and
	// cursor_position) is performed, once per call, and must return once
	// it has recorded, durably, that the call began to act: a run resumed
	// after a crash then answers the call without performing it again
	// (Resume.Begun). An error stops the call before that action runs.
	OnIntent func(ctx context.Context, callID string) error

	Logger *slog.Logger // nil: slog.Default()
}

// Executor is the one per-action path. Every door an action can come in by
// (the loop's model, an executor API client, an MCP client, an operator
// during a takeover, a replay) hands its call to Do, which decodes-checks,
// validates, checks the Policy, decides which typed text is secret,
// maps the coordinates with the frame the caller saw, asks the Approver,
// performs, captures a fresh screenshot and records every step. Record is
// the redaction boundary: no event leaves the Executor but through it, so
// no sink sees a secret.
//
// Calls of the loop and of a client run one at a time; an operator's input
// may run while a model's call waits for the display (the display wrapper
// decides), so the Executor's state has its own lock.
type Executor struct {
	cfg ExecutorConfig
	log *slog.Logger

	run sync.Mutex // one non-operator call at a time

	mu       sync.Mutex              // guards everything below, the trace and OnEvent
	frames   map[string]screen.Frame // the newest MaxFrames frames, by id
	order    []string                // frames' ids, oldest first
	latest   screen.Frame            // the latest full frame a caller was sent
	opLatest screen.Frame            // the latest full frame the operator was sent
	cursor   *actions.Point          // last pointer position, CSS px
	unsure   map[unsureKey]struct{}  // typed texts Prepare masked without knowing
	redact   Redactor
	traceErr error
}

// NewExecutor checks cfg and returns an Executor.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if cfg.Display == nil {
		return nil, errors.New("harness: ExecutorConfig needs a Display")
	}
	if cfg.Inspector == nil {
		if in, ok := cfg.Display.(Inspector); ok {
			cfg.Inspector = in
		}
	}
	if cfg.Referencer == nil {
		if rf, ok := cfg.Display.(Referencer); ok {
			cfg.Referencer = rf
		}
	}
	cfg.ActionTimeout = cmp.Or(cfg.ActionTimeout, 15*time.Second)
	cfg.InspectTimeout = cmp.Or(cfg.InspectTimeout, 3*time.Second)
	e := &Executor{cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), frames: map[string]screen.Frame{},
		unsure: map[unsureKey]struct{}{}}
	for name, v := range cfg.Secrets {
		e.redact.add(v, "[secret "+name+"]")
	}
	return e, nil
}

// Remember makes frames known, oldest first, as after a restart: calls may
// refer to them, and the last full one is the latest.
func (e *Executor) Remember(frames []screen.Frame) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range frames {
		e.keep(f)
		if !f.Zoomed() {
			e.latest = f
		}
	}
}

// MaxFrames is how many screenshots' frames an Executor keeps for calls
// that name the screenshot they were decided on; a call naming an older
// one gets ErrUnknownFrame. A model sees a handful of recent screenshots,
// so this only bounds the memory of a session that runs for days.
const MaxFrames = 256

// keep remembers f, forgetting the oldest frame past MaxFrames. e.mu is
// held.
func (e *Executor) keep(f screen.Frame) {
	if _, ok := e.frames[f.ID]; !ok {
		e.order = append(e.order, f.ID)
	}
	e.frames[f.ID] = f
	for len(e.order) > MaxFrames {
		delete(e.frames, e.order[0])
		e.order = slices.Delete(e.order, 0, 1)
	}
}

// Latest returns the latest full frame a caller was sent.
func (e *Executor) Latest() screen.Frame {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.latest
}

// Redactor returns a copy of the redactor of everything secret so far, for
// what a caller stores outside the events (a model's saved conversation).
func (e *Executor) Redactor() Redactor {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.redact.clone()
}

// TraceErr returns the error that stopped the trace, if any.
func (e *Executor) TraceErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.traceErr
}

// Screenshot captures the display for actor, remembers the frame and saves
// it to the trace, returning the trace file name ("" without a trace).
func (e *Executor) Screenshot(ctx context.Context, actor Actor) (screen.Shot, string, error) {
	shot, err := e.capture(WithActor(ctx, actor), e.cfg.Capture)
	if err != nil {
		return screen.Shot{}, "", err
	}
	e.mu.Lock()
	e.keep(shot.Frame)
	if actor == ActorOperator {
		e.opLatest = shot.Frame
	} else {
		e.latest = shot.Frame
	}
	e.mu.Unlock()
	return shot, e.saveShot(shot), nil
}

// capture takes a screenshot as o says, in a span of its own with its
// settle wait, and counts it.
func (e *Executor) capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	t0 := time.Now()
	ctx, span := tracer.Start(ctx, SpanCapture, oteltrace.WithTimestamp(t0))
	shot, err := e.cfg.Display.Capture(ctx, o)
	metricCapture.Observe(time.Since(t0).Seconds())
	if err == nil {
		st := shot.Frame.Settle
		settleSpan(ctx, t0, st.Waited, st.TimedOut, st.Reason)
		span.SetAttributes(attribute.String("spotter.frame.id", shot.Frame.ID))
	}
	endSpan(span, err)
	return shot, err
}

// Options say how Do treats one call.
type Options struct {
	Actor     Actor  // zero: ActorModel
	Step      int    // the model turn, for the trace
	ModelText string // the model's words, for the approval request
	// Refuse, when set, answers the call with this error without running
	// it (a truncated turn, a repeat the loop stops).
	Refuse error
	// Notes go first into the result (a repeat warning).
	Notes []string
	// Prepared says the call's secrets were already decided (Prepare);
	// otherwise Do decides them.
	Prepared bool

	// boxes frame the elements of the call's element references, in
	// image pixels of its frame (resolveRefs).
	boxes map[string]actions.Rect
}

// Prepare decides, before anything about them is recorded, which typed
// texts of calls are secret, and returns the calls with those actions
// marked (actions.Action.Secret). The calls are one turn's display calls
// in order; a text is secret when it looks like a card number, or will be
// typed into a password, one-time-code or
// payment field: the focused one, or the one a click of the same turn
// reaches. When that cannot be known (a key or a click on something that
// is not a text field comes first, a hit-test fails), the text of a
// display with a DOM is treated as secret. A {{NAME}} placeholder is not
// itself secret: it is recorded as written, and its value never is.
//
// A secret text is redacted from then on wherever it appears, whether it
// is ever typed or not (a denial, an expiry, a shutdown while a human
// decides): the model wrote it, so its own conversation, which a session
// saves and Redactor serves to redact, holds it from this turn on.
func (e *Executor) Prepare(ctx context.Context, calls []Call) []Call {
	out := make([]Call, len(calls))
	var p predictor
	for i, c := range calls {
		if c.DecodeErr == nil && len(c.Actions) > 0 {
			c.Actions = append([]actions.Action(nil), c.Actions...)
			for j := range c.Actions {
				a := c.Actions[j]
				switch e.secretText(ctx, &p, a) {
				case secret:
					c.Actions[j].Secret = true
					if e.unveil(a.Text) == a.Text { // placeholders' values are redacted already
						e.addSecret(a.Text)
					}
				case unsure:
					// Recorded masked; its value joins the redacted
					// secrets only if it goes into a secret field
					// (typedSecret), so that a search term is not
					// scrubbed from the model's conversation.
					c.Actions[j].Secret = true
					e.mu.Lock()
					e.unsure[unsureKey{c.ID, j}] = struct{}{}
					e.mu.Unlock()
				}
				p.after(c, j)
			}
		}
		out[i] = c
	}
	return out
}

// predictor follows a turn's actions to tell where typing will go.
type predictor struct {
	moved  bool     // an action of the turn may have moved the focus
	effect bool     // an action with an effect on the page came before
	click  *clickAt // the last focus move, a click at a point on the page as it is now; nil: none or unknown
}

type clickAt struct {
	call  Call
	index int
	hit   *screen.Target // looked up once
	err   error
}

// after notes action j of c, which comes before the next one.
func (p *predictor) after(c Call, j int) {
	a := c.Actions[j]
	switch a.Kind {
	case actions.Type, actions.Screenshot, actions.Wait, actions.Zoom, actions.CursorPosition,
		actions.ListTabs, actions.Move, actions.Scroll:
		// The focus stays where it is.
	case actions.Click, actions.DoubleClick, actions.TripleClick, actions.MouseDown:
		p.moved, p.click = true, nil
		if a.HasAt && !p.effect {
			p.click = &clickAt{call: c, index: j}
		}
	default:
		p.moved, p.click = true, nil
	}
	switch a.Kind {
	case actions.Type, actions.Screenshot, actions.Wait, actions.Zoom, actions.CursorPosition, actions.ListTabs, actions.Move:
	default:
		p.effect = true
	}
}

// A verdict is what Prepare concluded about one typed text.
type verdict uint8

const (
	clear  verdict = iota // not secret
	secret                // secret: a password, one-time-code or payment field, a card number
	unsure                // where the text goes cannot be foreseen; recorded masked to be safe
)

// secretText judges a's text. p holds what the turn did before it.
func (e *Executor) secretText(ctx context.Context, p *predictor, a actions.Action) verdict {
	switch {
	case a.Secret:
		return secret
	case a.Text == "" || (a.Kind != actions.Type && a.Kind != actions.Dialog):
		return clear
	case screen.LooksLikeCard(a.Text):
		return secret
	case a.Kind == actions.Dialog || e.cfg.Inspector == nil:
		return clear // a prompt dialog, or no DOM to ask
	}
	ictx, cancel := context.WithTimeout(ctx, e.cfg.InspectTimeout)
	defer cancel()
	judge := func(t screen.Target, err error) verdict {
		switch {
		case errors.Is(err, screen.ErrUnsupported):
			return clear // no DOM after all (a desktop behind a wrapper)
		case err != nil:
			return unsure
		case t.SecretField():
			return secret
		}
		return clear
	}
	if !p.moved {
		return judge(e.cfg.Inspector.Focused(ictx))
	}
	k := p.click
	if k == nil {
		return unsure // a key, a tab switch, a second click: the focus is anyone's guess
	}
	if k.hit == nil && k.err == nil {
		k.err = errors.New("no frame")
		if frame, err := e.frameOf(k.call.FrameID); err == nil {
			if m, err := frame.Map(k.call.Actions[k.index], cmp.Or(k.call.Space, screen.Image)); err == nil {
				t, err := e.cfg.Inspector.HitTest(ictx, m.At)
				k.hit, k.err = &t, err
			}
		}
	}
	v := judge(*cmp.Or(k.hit, &screen.Target{}), k.err)
	if v == clear && k.err == nil && !k.hit.Editable {
		// A click on a text field puts the focus there; a click on
		// anything else may move it anywhere (a script, a label, a
		// dialog opening).
		return unsure
	}
	return v
}

// typedSecret reports whether the text of action i of call id, which
// Prepare marked secret, is one for certain, or (when Prepare was unsure)
// whether it goes into a secret field now that it is about to be typed.
func (e *Executor) typedSecret(ctx context.Context, id string, i int) bool {
	e.mu.Lock()
	_, doubt := e.unsure[unsureKey{id, i}]
	delete(e.unsure, unsureKey{id, i})
	e.mu.Unlock()
	if !doubt {
		return true
	}
	if e.cfg.Inspector == nil {
		return false
	}
	ictx, cancel := context.WithTimeout(ctx, e.cfg.InspectTimeout)
	defer cancel()
	t, err := e.cfg.Inspector.Focused(ictx)
	return err == nil && t.SecretField()
}

// forgetUnsure drops what Prepare doubted about call id, once it ran.
func (e *Executor) forgetUnsure(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.unsure {
		if k.call == id {
			delete(e.unsure, k)
		}
	}
}

type unsureKey struct {
	call  string
	index int
}

// frameOf returns the frame id names, or the latest.
func (e *Executor) frameOf(id string) (screen.Frame, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id == "" {
		return e.latest, nil
	}
	f, ok := e.frames[id]
	if !ok {
		return screen.Frame{}, fmt.Errorf("%w %q (calls may name one of the newest %d)", ErrUnknownFrame, id, MaxFrames)
	}
	return f, nil
}

// Do runs call c for o.Actor and answers it with a fresh screenshot. It
// records the call, each action and the result, all masked. A failure of
// any kind is the Result's Err, in words for the caller; Do blocks while
// the Approver decides.
func (e *Executor) Do(ctx context.Context, c Call, o Options) Result {
	actor := cmp.Or(o.Actor, ActorModel)
	if actor != ActorOperator {
		e.run.Lock()
		defer e.run.Unlock()
	}
	ctx = WithActor(ctx, actor)
	var refNotes []string
	if hasRefs(c.Actions) && o.Refuse == nil && c.DecodeErr == nil {
		// Element references become points of the current screen first:
		// from here on the call is one in pixels, on the one path.
		rc, boxes, notes, err := e.resolveRefs(ctx, c, actor)
		if err != nil {
			o.Refuse = err
		} else {
			c, o.boxes, refNotes = rc, boxes, notes
		}
	}
	if !o.Prepared {
		c = e.Prepare(ctx, []Call{c})[0]
	}
	t0 := time.Now()
	ce := trace.Event{Type: trace.TypeCall, Step: o.Step, CallID: c.ID, Name: c.Name, FrameID: c.FrameID,
		Space: c.Space, Raw: validJSON(c.Raw), Actor: actorName(actor)}
	if c.DecodeErr != nil {
		ce.Error = c.DecodeErr.Error()
	}
	e.recordCall(ce, c.Actions)

	defer e.forgetUnsure(c.ID)
	r := Result{CallID: c.ID, Notes: append(append([]string(nil), o.Notes...), refNotes...)}
	if o.Refuse != nil {
		r.Err = o.Refuse
	} else {
		r.Err = e.execute(ctx, c, o, actor, &r)
	}
	// Every result carries a fresh screenshot, whatever happened above.
	if shot, name, err := e.Screenshot(ctx, actor); err != nil {
		if r.Err == nil {
			// Say that the call itself ran: only its screenshot failed.
			ran := "the action ran"
			if n := len(c.Actions); n != 1 {
				ran = fmt.Sprintf("all %d actions ran", n)
			}
			r.Err = fmt.Errorf("%s, but no screenshot could be taken after it: %w", ran, err)
		} else {
			r.Err = errors.Join(r.Err, fmt.Errorf("no screenshot could be taken after the call either: %w", err))
		}
		e.finish(&r, t0, "", o.Step, actor, screen.PageLog{})
	} else {
		// What the display noted (a tab opened, a human acted) is said
		// once, in the notes; the shot no longer carries it.
		r.Notes = append(r.Notes, shot.Events...)
		shot.Events = nil
		// What the page logged and requested goes to the record only.
		page := shot.Log
		shot.Log = screen.PageLog{}
		r.Shot = &shot
		if shot.Frame.Settle.TimedOut {
			r.Notes = append(r.Notes, fmt.Sprintf("The page had not settled after %v (%s); the screenshot may show it mid-change.",
				shot.Frame.Settle.Waited.Round(time.Millisecond), shot.Frame.Settle.Reason))
		}
		if r.cursorCSS != nil {
			p := shot.Frame.FromCSS(*r.cursorCSS)
			r.Cursor = &p
		}
		e.finish(&r, t0, name, o.Step, actor, page)
	}
	return r
}

// recordCall records a call event with its raw form masked.
func (e *Executor) recordCall(ev trace.Event, batch []actions.Action) {
	ev.Raw = maskRaw(ev.Raw, batch)
	e.Record(ev)
}

// maskRaw returns a call's raw form with the text its batch types
// replaced: a secret one by SecretMask, any other by "[typed text]". The
// raw form only repeats the actions, which show the text that is not
// secret; and it is recorded before the approval rules have looked at the
// field, so it holds no typed text at all.
func maskRaw(raw json.RawMessage, batch []actions.Action) json.RawMessage {
	var mask Redactor
	for _, a := range batch {
		switch {
		case a.Text == "":
		case a.Secret:
			mask.add(a.Text, actions.SecretMask)
		case a.Kind == actions.Type || a.Kind == actions.Dialog:
			mask.add(a.Text, "[typed text]")
		}
	}
	return mask.JSON(raw)
}

func actorName(a Actor) string {
	if a == ActorModel {
		return ""
	}
	return string(a)
}

// finish records r; shot is the trace file of r.Shot, and page what the
// page logged and requested up to it.
func (e *Executor) finish(r *Result, t0 time.Time, shot string, step int, actor Actor, page screen.PageLog) {
	r.Elapsed = time.Since(t0)
	ev := trace.Event{Type: trace.TypeResult, Step: step, CallID: r.CallID, Ran: r.Ran, Error: errString(r.Err),
		Notes: r.Notes, Elapsed: r.Elapsed, Actor: actorName(actor), Page: page}
	if r.Shot != nil {
		ev.FrameID, ev.Frame, ev.Shot = r.Shot.Frame.ID, r.Shot.Frame, shot
	}
	e.Record(ev)
}

// execute validates and performs c's batch, filling r. It returns why the
// call failed, in words for the caller, or nil.
func (e *Executor) execute(ctx context.Context, c Call, o Options, actor Actor, r *Result) error {
	if c.DecodeErr != nil {
		return fmt.Errorf("could not decode the call: %w", c.DecodeErr)
	}
	if hasRefs(c.Actions) && o.boxes == nil {
		return errors.New("the call's element references were not resolved") // never reaches a display
	}
	frame, err := e.frameFor(c, actor, r)
	if err != nil {
		return err
	}
	if err := actions.ValidateBatch(c.Actions, e.cfg.Limits); err != nil {
		return err
	}
	if err := e.cfg.Policy.CheckBatch(c.Actions); err != nil {
		return err
	}
	if len(c.SafetyChecks) > 0 {
		if e.cfg.Approver == nil || actor == ActorOperator {
			return fmt.Errorf("%w: the provider's safety checks (%s) need a human's approval, and nobody is asked here", ErrDenied, checkCodes(c.SafetyChecks))
		}
		d, err := e.cfg.Approver.Approve(ctx, ApprovalRequest{CallID: c.ID, Index: -1, Frame: frame,
			SafetyChecks: c.SafetyChecks, ModelText: o.ModelText})
		if err != nil {
			return fmt.Errorf("safety checks (%s): %w", checkCodes(c.SafetyChecks), err)
		}
		r.Notes = append(r.Notes, d.Notes...)
		r.Acknowledged = c.SafetyChecks
	}
	intent := e.cfg.OnIntent
	for i, a := range c.Actions {
		if err := e.act(ctx, c, o, actor, i, a, frame, r, &intent); err != nil {
			return fmt.Errorf("action %d (%s): %w", i, a.Kind, err)
		}
		r.Ran++
	}
	return nil
}

// frameFor returns the frame c's coordinates refer to, and flags an old one.
func (e *Executor) frameFor(c Call, actor Actor, r *Result) (screen.Frame, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	latest := e.latest
	if actor == ActorOperator && e.opLatest.ID != "" {
		latest = e.opLatest
	}
	if c.FrameID == "" || c.FrameID == latest.ID {
		if latest.ID == "" && needsFrame(c.Actions) {
			return screen.Frame{}, ErrNoFrame
		}
		return latest, nil
	}
	f, ok := e.frames[c.FrameID]
	if !ok {
		return screen.Frame{}, fmt.Errorf("%w %q (calls may name one of the newest %d)", ErrUnknownFrame, c.FrameID, MaxFrames)
	}
	if f.Zoomed() {
		return f, nil // coordinates in a zoom image map into its region
	}
	if e.cfg.RejectStale {
		return screen.Frame{}, fmt.Errorf("%w: the call refers to screenshot %s but %s is the latest", ErrStaleFrame, f.ID, latest.ID)
	}
	r.Notes = append(r.Notes, fmt.Sprintf("This call refers to screenshot %s, but %s is the latest; its coordinates were mapped with %s's geometry.", f.ID, latest.ID, f.ID))
	return f, nil
}

// ErrNoFrame marks a call with coordinates before any screenshot was taken.
var ErrNoFrame = errors.New("no screenshot has been taken yet; take one first (kind screenshot)")

func needsFrame(batch []actions.Action) bool {
	for _, a := range batch {
		if a.HasAt || len(a.Path) > 0 || !a.Region.Empty() {
			return true
		}
	}
	return false
}

// act runs one action of a batch, in a span of its own, and counts it.
// intent, until it is called (and set to nil), records that the call is
// about to act on the display.
func (e *Executor) act(ctx context.Context, c Call, o Options, actor Actor, i int, a actions.Action, frame screen.Frame, r *Result,
	intent *func(context.Context, string) error) error {
	t0 := time.Now()
	ctx, span := tracer.Start(ctx, SpanAction, oteltrace.WithAttributes(attribute.String("spotter.action.kind", a.Kind.String()),
		attribute.Int("spotter.action.index", i), attribute.String("spotter.actor", string(actor))))
	err := e.actOne(ctx, c, o, actor, i, a, frame, r, intent)
	outcome := outcomeOK
	switch {
	case errors.Is(err, ErrDenied):
		outcome = outcomeDenied
	case err != nil:
		outcome = outcomeError
	}
	metricAction.WithLabelValues(a.Kind.String(), outcome).Observe(time.Since(t0).Seconds())
	endSpan(span, err)
	return err
}

// actOne runs one action of a batch.
func (e *Executor) actOne(ctx context.Context, c Call, o Options, actor Actor, i int, a actions.Action, frame screen.Frame, r *Result,
	intent *func(context.Context, string) error) error {
	m, err := frame.Map(a, cmp.Or(c.Space, screen.Image))
	if err != nil {
		return err
	}
	e.mu.Lock()
	stale := frame.ID != e.latest.ID && !frame.Zoomed() && actor != ActorOperator
	e.mu.Unlock()
	ev := trace.Event{Type: trace.TypeAction, Step: o.Step, CallID: c.ID, Index: i, FrameID: frame.ID,
		Frame: frame, Action: a, Mapped: m, Stale: stale, Secret: a.Secret, Actor: actorName(actor)}
	t0 := time.Now()
	defer func() { ev.Elapsed = time.Since(t0); e.Record(ev) }()
	fail := func(err error) error { ev.Error = err.Error(); return err }

	if a.Secret && a.Text == actions.SecretMask {
		// A secret's text is never stored: a call restored after a
		// restart has only its mask.
		return fail(errors.New("this text was secret and is not kept across a restart; send the action again"))
	}
	if e.cfg.Approver != nil && actor != ActorOperator {
		req := ApprovalRequest{CallID: c.ID, Index: i, Action: a, Frame: frame, ModelText: o.ModelText}
		if a.Kind.IsPointer() {
			req.Mapped = &m
		}
		if ps := points(&a); len(ps) > 0 && ps[0].Ref != "" {
			if b, ok := o.boxes[ps[0].Ref]; ok {
				req.Element = &b
			}
		}
		d, err := e.cfg.Approver.Approve(ctx, req)
		if d.Secret && !a.Secret {
			// The rules found a secret field that Prepare did not foresee:
			// from now on the text is masked wherever it appears.
			ev.Secret = true
			e.addSecret(a.Text)
		}
		if err != nil {
			return fail(err)
		}
		r.Notes = append(r.Notes, d.Notes...)
		if d.Edit != nil {
			ed := *d.Edit
			ed.Secret = ed.Secret || ev.Secret
			if ed.Secret && ed.Text == actions.SecretMask {
				ed.Text = a.Text // the human saw the mask and kept it: the text stays the model's
			}
			if a, m, err = e.edited(ed, frame); err != nil {
				return fail(err)
			}
			ev.Action, ev.Mapped, ev.Edited, ev.Secret = a, m, true, a.Secret
			r.Notes = append(r.Notes, fmt.Sprintf("A human edited this action before it ran; it ran as %s.", describe(a)))
		}
	}
	if ev.Secret && a.Kind == actions.Type && (ev.Edited || e.typedSecret(ctx, c.ID, i)) {
		e.addSecret(a.Text)
	}

	switch a.Kind {
	case actions.Screenshot:
		// The fresh screenshot after the batch answers it.
	case actions.Wait:
		err = sleep(ctx, a.Duration)
	case actions.CursorPosition:
		e.mu.Lock()
		cur := e.cursor
		e.mu.Unlock()
		if cur == nil {
			err = errors.New("the pointer has not been moved yet")
			break
		}
		p := *cur
		r.cursorCSS = &p
	case actions.Zoom:
		var shot screen.Shot
		shot, err = e.zoom(ctx, m.Region, o.Step)
		if err == nil {
			r.Zoom = &shot
		}
	default:
		if *intent != nil {
			if err := (*intent)(ctx, c.ID); err != nil {
				return fail(fmt.Errorf("not performed: that it was about to run could not be recorded: %w", err))
			}
			*intent = nil
		}
		if m.Kind == actions.Type {
			m.Text = e.unveil(m.Text)
		}
		actx, cancel := context.WithTimeout(ctx, e.cfg.ActionTimeout+a.Duration)
		err = e.cfg.Display.Perform(actx, m)
		cancel()
		if err == nil {
			e.trackCursor(m)
		}
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

func (e *Executor) addSecret(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.redact.add(text, "[typed secret]")
}

// unveil replaces {{NAME}} placeholders of the Secrets in typed text.
func (e *Executor) unveil(text string) string {
	if len(e.cfg.Secrets) == 0 || !strings.Contains(text, "{{") {
		return text
	}
	for name, v := range e.cfg.Secrets {
		text = strings.ReplaceAll(text, "{{"+name+"}}", v)
	}
	return text
}

// edited checks a human's replacement for an action, in the pixels of
// frame's image, and maps it.
func (e *Executor) edited(a actions.Action, frame screen.Frame) (actions.Action, screen.Mapped, error) {
	if err := a.Validate(e.cfg.Limits); err != nil {
		return a, screen.Mapped{}, fmt.Errorf("the approver's edit: %w", err)
	}
	if err := e.cfg.Policy.Check(a); err != nil {
		return a, screen.Mapped{}, fmt.Errorf("the approver's edit: %w", err)
	}
	m, err := frame.Map(a, screen.Image)
	if err != nil {
		return a, screen.Mapped{}, fmt.Errorf("the approver's edit: %w", err)
	}
	return a, m, nil
}

func (e *Executor) trackCursor(m screen.Mapped) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case m.Kind == actions.Drag && len(m.Path) > 0:
		p := m.Path[len(m.Path)-1]
		e.cursor = &p
	case m.Kind.IsPointer() && m.HasAt:
		p := m.At
		e.cursor = &p
	}
}

// zoom captures region (CSS px) at full resolution, capped at ZoomMax.
func (e *Executor) zoom(ctx context.Context, region actions.Rect, step int) (screen.Shot, error) {
	e.mu.Lock()
	dpr := cmp.Or(e.latest.DPR, 1)
	e.mu.Unlock()
	full := screen.Size{W: int(region.Dx() * dpr), H: int(region.Dy() * dpr)}
	limit := e.cfg.ZoomMax
	if limit == 0 {
		limit = cmp.Or(max(e.cfg.Capture.Size.W, e.cfg.Capture.Size.H), 1568)
	}
	o := e.cfg.Capture
	o.Region = region
	o.Size = fitLongEdge(full, limit)
	shot, err := e.capture(ctx, o)
	if err != nil {
		return screen.Shot{}, err
	}
	e.mu.Lock()
	e.keep(shot.Frame)
	e.mu.Unlock()
	if name := e.saveShot(shot); name != "" {
		e.Record(trace.Event{Type: trace.TypeNote, Step: step, Text: "zoom capture " + shot.Frame.ID,
			FrameID: shot.Frame.ID, Frame: shot.Frame, Shot: name})
	}
	return shot, nil
}

// Record is the redaction boundary: it masks secret actions, redacts every
// secret value, writes the event to the trace and hands it to OnEvent.
func (e *Executor) Record(ev trace.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.redact.event(&ev)
	if e.cfg.Trace != nil && e.traceErr == nil {
		if err := e.cfg.Trace.Write(ev); err != nil {
			e.traceErr = err
			e.log.Error("trace write failed; stopping", "err", err)
		}
	}
	if e.cfg.OnEvent != nil {
		e.cfg.OnEvent(ev)
	}
}

// saveShot writes s to the trace and returns its file name, or "" when
// there is no trace or it failed.
func (e *Executor) saveShot(s screen.Shot) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cfg.Trace == nil || e.traceErr != nil {
		return ""
	}
	name, err := e.cfg.Trace.WriteShot(s)
	if err != nil {
		e.traceErr = err
		e.log.Error("trace screenshot failed; stopping", "err", err)
		return ""
	}
	return name
}

// MaskTurn returns t as every record shows it: the secret texts of its
// calls masked in the actions, the raw calls and the inputs, and every
// secret value redacted.
func (e *Executor) MaskTurn(t Turn) Turn {
	r := e.Redactor()
	out := t
	out.Text = r.String(t.Text)
	out.Calls = make([]Call, len(t.Calls))
	for i, c := range t.Calls {
		raw, input := maskRaw(c.Raw, c.Actions), maskRaw(c.Input, c.Actions)
		if len(c.Actions) > 0 {
			acts := make([]actions.Action, len(c.Actions))
			for j, a := range c.Actions {
				acts[j] = a.Masked()
				acts[j].Text, acts[j].URL = r.String(acts[j].Text), r.URL(acts[j].URL)
			}
			c.Actions = acts
		}
		c.Raw, c.Input = r.JSON(raw), r.JSON(input)
		out.Calls[i] = c
	}
	return out
}

// describe names an action for the model without repeating typed text.
func describe(a actions.Action) string {
	switch {
	case a.Kind == actions.Type:
		return fmt.Sprintf("type (%d characters)", utf8.RuneCountInString(a.Text))
	case a.Kind.IsPointer() && a.HasAt:
		return fmt.Sprintf("%s at %v in the screenshot", a.Kind, a.At)
	}
	return a.Kind.String()
}

func fitLongEdge(s screen.Size, limit int) screen.Size {
	long := max(s.W, s.H)
	if long <= limit || long == 0 {
		return screen.Size{W: max(s.W, 1), H: max(s.H, 1)}
	}
	return screen.Size{W: max(s.W*limit/long, 1), H: max(s.H*limit/long, 1)}
}

// countRepeat updates repeat detection with c and reports whether the run
