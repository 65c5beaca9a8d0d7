// Package harness is Spotter's screenshot-action loop: it sends the model a
// screenshot, takes the calls the model proposes, validates them against the
// action limits and the Policy, maps their coordinates with the geometry of the
// screenshot the model saw, performs them on a Display, and answers every call
// with a fresh screenshot paired to the call's id. It repeats until the model
// stops or a guardrail fires (step cap, repeat detection, a dead display).
//
// The loop knows no provider, browser or HTTP type: providers implement Model
// (harness/script, harness/anthropic, ...), displays implement Display
// (screen/cdp, ...), and a human's say comes through Approver.
package harness

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// Sentinel errors. The loop reports them inside Results and Outcomes.
var (
	// ErrDenied marks a call a human (or the default policy) refused.
	ErrDenied = errors.New("denied")
	// ErrStaleFrame marks a call that referred to an older screenshot while
	// Config.RejectStale is set.
	ErrStaleFrame = errors.New("refers to an older screenshot")
	// ErrUnknownFrame marks a call that referred to a screenshot the loop
	// never sent.
	ErrUnknownFrame = errors.New("unknown screenshot")
	// ErrTruncated marks calls of a turn that the provider cut short.
	ErrTruncated = errors.New("tool call truncated by max_tokens; not executed")
)

// An Approver decides whether an action may run. It returns at once for
// actions its rules let through, and otherwise blocks until a human allows
// the request or refuses it. A refusal is an error wrapping ErrDenied with
// the reason the model should see.
type Approver interface {
	Approve(ctx context.Context, r ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(context.Context, ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, r ApprovalRequest) (Decision, error) {
	return f(ctx, r)
}

// Decision is an approval. Its zero value lets the action run unchanged.
type Decision struct {
	// Edit, when set, replaces the action: a human changed the coordinates
	// or the text. Its coordinates are pixels of the Frame's image
	// (screen.Image), as an approval panel shows it. The edited action is
	// validated and checked against the Policy like the model's own.
	Edit *actions.Action
	// Notes go into the call's Result for the model ("a human changed the
	// text you typed", "approval rules without a DOM looked at the action
	// only").
	Notes []string
	// Secret marks an action whose text must never be shown: typing into
	// a password field. The trace, the events and the report mask it, and
	// the text is redacted from everything the run records afterwards.
	Secret bool
}

// ApprovalRequest is what a human sees when deciding.
type ApprovalRequest struct {
	CallID       string
	Index        int            // index of Action in the call's batch; -1 for the call's safety checks
	Action       actions.Action // in model coordinates
	Mapped       *screen.Mapped // in CSS pixels; nil for actions without coordinates
	Frame        screen.Frame   // the screenshot the model saw
	SafetyChecks []SafetyCheck  // provider-raised checks, for Index -1
	ModelText    string         // the model's own words for this turn
}

// Config configures one run. Zero values are documented defaults.
type Config struct {
	Model   Model   // required
	Display Display // required
	Task    string  // what the model is asked to do

	Policy actions.Policy // the zero Policy allows only screenshots
	Limits actions.Limits // zero: actions' defaults

	// Capture says what the model is sent after each call: Size is the
	// image size under the model's size rule (zero: the viewport's CSS
	// size), Format PNG or JPEG.
	Capture screen.CaptureOptions
	// ZoomMax caps the size of a zoom capture (zero: Capture.Size's long
	// edge, or 1568 when that is unset).
	ZoomMax int

	MaxSteps int // model turns; default 50

	// RepeatWarn and RepeatStop bound repeated identical calls: at
	// RepeatWarn identical calls in a row the model is told, at RepeatStop
	// the run stops with StopRepeat. Defaults 3 and 5.
	RepeatWarn, RepeatStop int

	// RejectStale refuses calls that refer to an older screenshot instead
	// of only flagging them.
	RejectStale bool

	// ActionTimeout bounds one action on the display, plus its own
	// duration for hold_key. Default 15s.
	ActionTimeout time.Duration

	// Approver, when set, is asked before each action runs and for every
	// provider safety check. When nil, actions run once the Policy allows
	// them and provider safety checks are denied.
	Approver Approver

	// Client runs the application-side tools: calls whose name it Has go
	// to it instead of the display. They run concurrently with the turn's
	// display calls, which run in order; the turn's results are sent to the
	// model when all have answered. Nil: every call is a display call.
	Client ClientTools

	// OnEvent, when set, sees every event the run records, after the trace
	// has it. It must not block for long: the loop waits for it.
	OnEvent func(trace.Event)

	// Resume continues a run that stopped in the middle of a turn (a
	// restart): the loop answers the turn's calls that have no result yet,
	// then goes on. Task and the first screenshot are not sent again.
	Resume *Resume

	// Secrets are values the model may type without ever seeing them: it
	// writes {{NAME}} and the loop substitutes the value just before the
	// display types it. Every value is redacted ("[secret NAME]") from
	// everything the run records and reports, wherever it appears.
	Secrets map[string]string

	Trace     *trace.Writer // nil: no trace
	ModelName string        // provider and model, for the trace
	Logger    *slog.Logger  // nil: slog.Default()
}

// ClientTools runs the tools that the loop's client implements (the
// application-side tools of a session).
type ClientTools interface {
	// Has reports whether name is a client tool.
	Has(name string) bool
	// Run blocks until the client answers c, and returns the answer's text
	// content. An error is the tool's failure, in words for the model.
	Run(ctx context.Context, c Call) (string, error)
}

// Resume is where a restarted run picks up.
type Resume struct {
	Step   int            // the step (model turn) number of Turn
	Turn   Turn           // the turn being answered
	Done   []Result       // results already given for some of Turn's calls; each needs its Shot
	Frames []screen.Frame // frames the model was sent, oldest first; the last full one is the latest
}

// Outcome is how a run ended.
type Outcome struct {
	Stop    StopReason    `json:"stop"`
	Steps   int           `json:"steps"`
	Text    string        `json:"text,omitempty"` // the model's last words
	Err     string        `json:"error,omitempty"`
	Calls   int           `json:"calls"`
	Failed  int           `json:"failed_calls"` // calls answered with an error result
	Elapsed time.Duration `json:"elapsed_ns"`
	Usage   Usage         `json:"usage"`
}

// OK reports whether the model ended the run itself.
func (o Outcome) OK() bool { return o.Stop == StopEndTurn }

// Run drives cfg.Model on cfg.Display until the model stops, a guardrail
// fires, or ctx is done. It blocks for the whole run. Failures of single
// calls go back to the model as data; Run returns an error only for a
// misconfiguration, and reports everything else in the Outcome.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	if cfg.Model == nil || cfg.Display == nil {
		return Outcome{}, errors.New("harness: Config needs a Model and a Display")
	}
	l := &loop{
		cfg:        cfg,
		log:        cmp.Or(cfg.Logger, slog.Default()),
		maxSteps:   cmp.Or(cfg.MaxSteps, 50),
		repeatWarn: cmp.Or(cfg.RepeatWarn, 3),
		repeatStop: cmp.Or(cfg.RepeatStop, 5),
		actTimeout: cmp.Or(cfg.ActionTimeout, 15*time.Second),
		frames:     map[string]screen.Frame{},
	}
	for name, v := range cfg.Secrets {
		l.redact.add(v, "[secret "+name+"]")
	}
	start := time.Now()
	out := l.run(ctx)
	out.Elapsed = time.Since(start)
	out.Steps = l.steps
	l.mu.Lock()
	out.Calls, out.Failed, out.Usage = l.calls, l.failed, l.usage
	l.mu.Unlock()
	l.record(trace.Event{Type: trace.TypeRunEnd, Stop: string(out.Stop), Error: out.Err, Text: out.Text,
		Elapsed: out.Elapsed, Step: out.Steps})
	return out, nil
}

type loop struct {
	cfg        Config
	log        *slog.Logger
	maxSteps   int
	repeatWarn int
	repeatStop int
	actTimeout time.Duration

	steps, calls, failed int
	usage                Usage

	frames   map[string]screen.Frame // every frame sent to the model, by id
	latest   screen.Frame            // the latest full (unzoomed) frame sent
	cursor   *actions.Point          // last pointer position, CSS px
	lastKey  string                  // repeat detection: the previous call's key
	repeats  int                     // how many times in a row lastKey was seen
	traceErr error                   // sticky: a trace that cannot be written stops the run

	mu     sync.Mutex // guards the trace, traceErr, redact and the call counters: client calls run concurrently
	redact redactor
}

func (l *loop) run(ctx context.Context) Outcome {
	var in Input
	if rs := l.cfg.Resume; rs != nil {
		for _, f := range rs.Frames {
			l.frames[f.ID] = f
			if !f.Zoomed() {
				l.latest = f
			}
		}
		l.steps = rs.Step
		l.record(trace.Event{Type: trace.TypeNote, Step: l.steps, Text: fmt.Sprintf("resumed at step %d with %d of %d calls answered",
			rs.Step, len(rs.Done), len(rs.Turn.Calls))})
		results, out, stop := l.answer(ctx, rs.Turn, rs.Done)
		if stop {
			return out
		}
		in = Input{Results: results}
	} else {
		shot, name, err := l.capture(ctx)
		if err != nil {
			l.record(trace.Event{Type: trace.TypeRunStart, Task: l.cfg.Task, Model: l.cfg.ModelName, Error: err.Error()})
			return Outcome{Stop: StopError, Err: fmt.Sprintf("first screenshot: %v", err)}
		}
		l.record(trace.Event{Type: trace.TypeRunStart, Task: l.cfg.Task, Model: l.cfg.ModelName, Shot: name, Frame: shot.Frame})
		in = Input{Task: l.cfg.Task, Shot: &shot}
	}
	for {
		if err := ctx.Err(); err != nil {
			return Outcome{Stop: StopError, Err: context.Cause(ctx).Error()}
		}
		if err := l.stickyTraceErr(); err != nil {
			return Outcome{Stop: StopError, Err: fmt.Sprintf("trace: %v", err)}
		}
		if l.steps >= l.maxSteps {
			return Outcome{Stop: StopMaxSteps, Err: fmt.Sprintf("step cap of %d reached", l.maxSteps)}
		}
		l.steps++
		t0 := time.Now()
		turn, err := l.cfg.Model.Next(ctx, l.toModel(in))
		if err != nil {
			l.record(trace.Event{Type: trace.TypeError, Step: l.steps, Error: err.Error()})
			return Outcome{Stop: StopError, Err: fmt.Sprintf("model: %v", err)}
		}
		l.addUsage(turn.Usage)
		l.record(trace.Event{Type: trace.TypeModelTurn, Step: l.steps, Text: turn.Text, Stop: string(turn.Stop),
			Usage: trace.Usage(turn.Usage), Elapsed: time.Since(t0)})
		if len(turn.Calls) == 0 {
			stop := cmp.Or(turn.Stop, StopEndTurn)
			if stop == StopToolUse { // a tool_use turn with no calls: nothing to answer
				stop = StopEndTurn
			}
			return Outcome{Stop: stop, Text: turn.Text}
		}
		results, out, stop := l.answer(ctx, turn, nil)
		if stop {
			return out
		}
		in = Input{Results: results}
	}
}

// answer answers every call of turn that done does not already answer:
// application-side calls concurrently through Config.Client, display calls
// in order. It returns the results in the calls' order, or an Outcome and
// true when the run must stop.
func (l *loop) answer(ctx context.Context, turn Turn, done []Result) ([]Result, Outcome, bool) {
	results := make([]Result, len(turn.Calls))
	answered := make(map[string]Result, len(done))
	for _, r := range done {
		answered[r.CallID] = r
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	isClient := func(c Call) bool { return l.cfg.Client != nil && c.DecodeErr == nil && l.cfg.Client.Has(c.Name) }
	for i, c := range turn.Calls {
		if r, ok := answered[c.ID]; ok {
			results[i] = r
			continue
		}
		if isClient(c) {
			wg.Go(func() { results[i] = l.clientCall(cctx, turn, c) })
		}
	}
	for i, c := range turn.Calls {
		if _, ok := answered[c.ID]; ok || isClient(c) {
			continue
		}
		r, stop := l.call(ctx, turn, c)
		results[i] = r
		if stop != "" {
			cancel()
			wg.Wait()
			return nil, Outcome{Stop: stop, Text: turn.Text, Err: errString(r.Err)}, true
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, Outcome{Stop: StopError, Err: context.Cause(ctx).Error()}, true
	}
	if err := l.goneErr(results); err != nil {
		return nil, Outcome{Stop: StopError, Err: err.Error()}, true
	}
	return results, Outcome{}, false
}

// clientCall hands c to the client and waits for its answer.
func (l *loop) clientCall(ctx context.Context, turn Turn, c Call) Result {
	l.count(false)
	t0 := time.Now()
	l.record(trace.Event{Type: trace.TypeCall, Step: l.steps, CallID: c.ID, Name: c.Name, Raw: validJSON(c.Raw),
		Input: validJSON(c.Input), Client: true})
	r := Result{CallID: c.ID}
	if turn.Stop == StopMaxTokens {
		r.Err = ErrTruncated
	} else {
		r.Output, r.Err = l.cfg.Client.Run(ctx, c)
	}
	if r.Err != nil {
		l.count(true)
	}
	r.Elapsed = time.Since(t0)
	l.record(trace.Event{Type: trace.TypeResult, Step: l.steps, CallID: c.ID, Text: r.Output, Error: errString(r.Err),
		Elapsed: r.Elapsed, Client: true})
	return r
}

func (l *loop) count(failed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if failed {
		l.failed++
	} else {
		l.calls++
	}
}

// call answers one call. A non-empty StopReason ends the run.
func (l *loop) call(ctx context.Context, turn Turn, c Call) (Result, StopReason) {
	l.count(false)
	t0 := time.Now()
	r := Result{CallID: c.ID}
	ce := trace.Event{Type: trace.TypeCall, Step: l.steps, CallID: c.ID, Name: c.Name, FrameID: c.FrameID,
		Space: c.Space, Raw: maskTyped(validJSON(c.Raw), c.Actions)}
	if c.DecodeErr != nil {
		ce.Error = c.DecodeErr.Error()
	}
	l.record(ce)

	stop := l.countRepeat(c)
	switch {
	case stop:
		r.Err = fmt.Errorf("the same call was repeated %d times in a row; the run is stopped", l.repeats)
		l.finish(&r, t0, "")
		return r, StopRepeat
	case l.repeats >= l.repeatWarn:
		r.Notes = append(r.Notes, fmt.Sprintf("You have sent this exact call %d times in a row. If the screen is not changing, try something else.", l.repeats))
	}

	r.Err = l.execute(ctx, turn, c, &r)
	if r.Err != nil {
		l.count(true)
	}
	// Every result carries a fresh screenshot, whatever happened above.
	shot, name, err := l.capture(ctx)
	if err != nil {
		r.Err = errors.Join(r.Err, fmt.Errorf("screenshot after the call: %w", err))
	} else {
		r.Shot = &shot
		r.Notes = append(r.Notes, shot.Events...)
		if shot.Frame.Settle.TimedOut {
			r.Notes = append(r.Notes, fmt.Sprintf("The page had not settled after %v (%s); the screenshot may show it mid-change.",
				shot.Frame.Settle.Waited.Round(time.Millisecond), shot.Frame.Settle.Reason))
		}
	}
	l.finish(&r, t0, name)
	return r, ""
}

// finish records r; shot is the trace file of r.Shot.
func (l *loop) finish(r *Result, t0 time.Time, shot string) {
	r.Elapsed = time.Since(t0)
	e := trace.Event{Type: trace.TypeResult, Step: l.steps, CallID: r.CallID, Ran: r.Ran, Error: errString(r.Err),
		Notes: r.Notes, Elapsed: r.Elapsed}
	if r.Shot != nil {
		e.FrameID, e.Frame, e.Shot = r.Shot.Frame.ID, r.Shot.Frame, shot
	}
	l.record(e)
}

// execute validates and performs c's batch, filling r. It returns why the
// call failed, in words for the model, or nil.
func (l *loop) execute(ctx context.Context, turn Turn, c Call, r *Result) error {
	if c.DecodeErr != nil {
		return fmt.Errorf("could not decode the call: %w", c.DecodeErr)
	}
	if turn.Stop == StopMaxTokens {
		return ErrTruncated
	}
	frame, err := l.frameFor(c, r)
	if err != nil {
		return err
	}
	if err := actions.ValidateBatch(c.Actions, l.cfg.Limits); err != nil {
		return err
	}
	if err := l.cfg.Policy.CheckBatch(c.Actions); err != nil {
		return err
	}
	if len(c.SafetyChecks) > 0 {
		if l.cfg.Approver == nil {
			return fmt.Errorf("%w: the provider's safety checks (%s) need a human's approval, and this run has no approver", ErrDenied, checkCodes(c.SafetyChecks))
		}
		d, err := l.cfg.Approver.Approve(ctx, ApprovalRequest{CallID: c.ID, Index: -1, Frame: frame,
			SafetyChecks: c.SafetyChecks, ModelText: turn.Text})
		if err != nil {
			return fmt.Errorf("safety checks (%s): %w", checkCodes(c.SafetyChecks), err)
		}
		r.Notes = append(r.Notes, d.Notes...)
		r.Acknowledged = c.SafetyChecks
	}
	for i, a := range c.Actions {
		if err := l.act(ctx, turn, c, i, a, frame, r); err != nil {
			return fmt.Errorf("action %d (%s): %w", i, a.Kind, err)
		}
		r.Ran++
	}
	return nil
}

// frameFor returns the frame c's coordinates refer to, and flags an old one.
func (l *loop) frameFor(c Call, r *Result) (screen.Frame, error) {
	if c.FrameID == "" || c.FrameID == l.latest.ID {
		return l.latest, nil
	}
	f, ok := l.frames[c.FrameID]
	if !ok {
		return screen.Frame{}, fmt.Errorf("%w %q", ErrUnknownFrame, c.FrameID)
	}
	if f.Zoomed() {
		return f, nil // coordinates in a zoom image map into its region
	}
	if l.cfg.RejectStale {
		return screen.Frame{}, fmt.Errorf("%w: the call refers to screenshot %s but %s is the latest", ErrStaleFrame, f.ID, l.latest.ID)
	}
	r.Notes = append(r.Notes, fmt.Sprintf("This call refers to screenshot %s, but %s is the latest; its coordinates were mapped with %s's geometry.", f.ID, l.latest.ID, f.ID))
	return f, nil
}

// act runs one action of a batch.
func (l *loop) act(ctx context.Context, turn Turn, c Call, i int, a actions.Action, frame screen.Frame, r *Result) error {
	m, err := frame.Map(a, c.Space)
	if err != nil {
		return err
	}
	ev := trace.Event{Type: trace.TypeAction, Step: l.steps, CallID: c.ID, Index: i, FrameID: frame.ID,
		Frame: frame, Action: a, Mapped: m, Stale: frame.ID != l.latest.ID && !frame.Zoomed()}
	t0 := time.Now()
	defer func() { ev.Elapsed = time.Since(t0); l.record(ev) }()

	if l.cfg.Approver != nil {
		req := ApprovalRequest{CallID: c.ID, Index: i, Action: a, Frame: frame, ModelText: turn.Text}
		if a.Kind.IsPointer() {
			req.Mapped = &m
		}
		d, err := l.cfg.Approver.Approve(ctx, req)
		if d.Secret {
			ev.Secret = true // a refused password stays as secret as an approved one
		}
		if err != nil {
			ev.Error = err.Error()
			return err
		}
		r.Notes = append(r.Notes, d.Notes...)
		if d.Secret {
			ev.Secret = true
		}
		if d.Edit != nil {
			if a, m, err = l.edited(*d.Edit, frame); err != nil {
				ev.Error = err.Error()
				return err
			}
			ev.Action, ev.Mapped, ev.Edited = a, m, true
			r.Notes = append(r.Notes, fmt.Sprintf("A human edited this action before it ran; it ran as %s.", describe(a)))
		}
	}

	switch a.Kind {
	case actions.Screenshot:
		// The fresh screenshot after the batch answers it.
	case actions.Wait:
		err = sleep(ctx, a.Duration)
	case actions.CursorPosition:
		if l.cursor == nil {
			err = errors.New("the pointer has not been moved yet")
			break
		}
		p := l.latest.FromCSS(*l.cursor)
		r.Cursor = &p
	case actions.Zoom:
		var shot screen.Shot
		shot, err = l.zoom(ctx, m.Region)
		if err == nil {
			r.Zoom = &shot
		}
	default:
		if ev.Secret && a.Kind == actions.Type {
			l.mu.Lock()
			l.redact.add(a.Text, "[typed secret]")
			l.mu.Unlock()
		}
		if m.Kind == actions.Type {
			m.Text = l.unveil(m.Text)
		}
		actx, cancel := context.WithTimeout(ctx, l.actTimeout+a.Duration)
		err = l.cfg.Display.Perform(actx, m)
		cancel()
		if err == nil {
			l.trackCursor(m)
		}
	}
	if err != nil {
		ev.Error = err.Error()
	}
	return err
}

// unveil replaces {{NAME}} placeholders of Config.Secrets in typed text.
func (l *loop) unveil(text string) string {
	if len(l.cfg.Secrets) == 0 || !strings.Contains(text, "{{") {
		return text
	}
	for name, v := range l.cfg.Secrets {
		text = strings.ReplaceAll(text, "{{"+name+"}}", v)
	}
	return text
}

// edited checks a human's replacement for an action, in the pixels of
// frame's image, and maps it.
func (l *loop) edited(a actions.Action, frame screen.Frame) (actions.Action, screen.Mapped, error) {
	if err := a.Validate(l.cfg.Limits); err != nil {
		return a, screen.Mapped{}, fmt.Errorf("the approver's edit: %w", err)
	}
	if err := l.cfg.Policy.Check(a); err != nil {
		return a, screen.Mapped{}, fmt.Errorf("the approver's edit: %w", err)
	}
	m, err := frame.Map(a, screen.Image)
	if err != nil {
		return a, screen.Mapped{}, fmt.Errorf("the approver's edit: %w", err)
	}
	return a, m, nil
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

func (l *loop) trackCursor(m screen.Mapped) {
	switch {
	case m.Kind == actions.Drag && len(m.Path) > 0:
		p := m.Path[len(m.Path)-1]
		l.cursor = &p
	case m.Kind.IsPointer() && m.HasAt:
		p := m.At
		l.cursor = &p
	}
}

// capture takes the screenshot the model is sent next, remembers its frame
// and saves it to the trace, returning the trace file name.
func (l *loop) capture(ctx context.Context) (screen.Shot, string, error) {
	shot, err := l.cfg.Display.Capture(ctx, l.cfg.Capture)
	if err != nil {
		return screen.Shot{}, "", err
	}
	l.frames[shot.Frame.ID] = shot.Frame
	l.latest = shot.Frame
	return shot, l.saveShot(shot), nil
}

// zoom captures region (CSS px) at full resolution, capped at ZoomMax.
func (l *loop) zoom(ctx context.Context, region actions.Rect) (screen.Shot, error) {
	dpr := cmp.Or(l.latest.DPR, 1)
	full := screen.Size{W: int(region.Dx() * dpr), H: int(region.Dy() * dpr)}
	limit := l.cfg.ZoomMax
	if limit == 0 {
		limit = cmp.Or(max(l.cfg.Capture.Size.W, l.cfg.Capture.Size.H), 1568)
	}
	o := l.cfg.Capture
	o.Region = region
	o.Size = fitLongEdge(full, limit)
	shot, err := l.cfg.Display.Capture(ctx, o)
	if err != nil {
		return screen.Shot{}, err
	}
	l.frames[shot.Frame.ID] = shot.Frame
	if name := l.saveShot(shot); name != "" {
		l.record(trace.Event{Type: trace.TypeNote, Step: l.steps, Text: "zoom capture " + shot.Frame.ID,
			FrameID: shot.Frame.ID, Frame: shot.Frame, Shot: name})
	}
	return shot, nil
}

func fitLongEdge(s screen.Size, limit int) screen.Size {
	long := max(s.W, s.H)
	if long <= limit || long == 0 {
		return screen.Size{W: max(s.W, 1), H: max(s.H, 1)}
	}
	return screen.Size{W: max(s.W*limit/long, 1), H: max(s.H*limit/long, 1)}
}

// countRepeat updates repeat detection with c and reports whether the run
// must stop.
func (l *loop) countRepeat(c Call) bool {
	key := callKey(c)
	if key == l.lastKey {
		l.repeats++
	} else {
		l.lastKey, l.repeats = key, 1
	}
	return l.repeats >= l.repeatStop
}

// callKey identifies a call by its name and arguments, not its id.
func callKey(c Call) string {
	var b bytes.Buffer
	b.WriteString(c.Name)
	b.WriteByte(0)
	if c.DecodeErr != nil {
		b.Write(c.Raw)
	} else if err := json.NewEncoder(&b).Encode(c.Actions); err != nil {
		b.Write(c.Raw)
	}
	return b.String()
}

// goneErr reports a display that died during the turn: the results already
// tell the model, and there is no display left to continue on.
func (l *loop) goneErr(rs []Result) error {
	for _, r := range rs {
		if r.Shot == nil && errors.Is(r.Err, screen.ErrGone) {
			return fmt.Errorf("display: %w", r.Err)
		}
	}
	return nil
}

func (l *loop) addUsage(u Usage) {
	l.usage.InputTokens += u.InputTokens
	l.usage.OutputTokens += u.OutputTokens
	l.usage.CachedTokens += u.CachedTokens
	l.usage.CostUSD += u.CostUSD
}

func (l *loop) record(e trace.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.redact.event(&e)
	if l.cfg.Trace != nil && l.traceErr == nil {
		if err := l.cfg.Trace.Write(e); err != nil {
			l.traceErr = err
			l.log.Error("trace write failed; stopping the run", "err", err)
		}
	}
	if l.cfg.OnEvent != nil {
		l.cfg.OnEvent(e)
	}
}

func (l *loop) stickyTraceErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.traceErr
}

// saveShot writes s to the trace and returns its file name, or "" when
// there is no trace or it failed (which stops the run).
func (l *loop) saveShot(s screen.Shot) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Trace == nil || l.traceErr != nil {
		return ""
	}
	name, err := l.cfg.Trace.WriteShot(s)
	if err != nil {
		l.traceErr = err
		l.log.Error("trace screenshot failed; stopping the run", "err", err)
		return ""
	}
	return name
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func checkCodes(cs []SafetyCheck) string {
	var b bytes.Buffer
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cmp.Or(c.Code, c.ID))
	}
	return b.String()
}

// validJSON returns raw if it is valid JSON, or raw as a JSON string, so a
// malformed call still reaches the trace.
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
