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
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

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
	// ErrOutcomeUnknown answers a call whose actions had begun to act on
	// the display when the run stopped (its intent was recorded, its
	// result was not): it is not performed again (Resume.Begun).
	ErrOutcomeUnknown = errors.New("the outcome of this call is unknown: the server stopped after its actions " +
		"began to run and before their result was recorded, so it was not performed again (it may have run in part " +
		"or in full); this screenshot shows the screen now: check it before doing anything again")
)

// MayHaveActed reports whether the screen may have changed since the
// caller's last screenshot because of r's call: it did not fail, some of
// its actions ran, or whether they ran is unknown (ErrOutcomeUnknown). A
// result that did not act leaves the screen as it was.
func (r Result) MayHaveActed() bool {
	return r.Err == nil || r.Ran > 0 || errors.Is(r.Err, ErrOutcomeUnknown)
}

// ResultErr is the error of a result as it was stored, in words: its
// sentinel again when it is one a provider adapter reads
// (ErrOutcomeUnknown), so that a result restored after a restart is
// encoded as it was the first time.
func ResultErr(stored string) error {
	switch stored {
	case "":
		return nil
	case ErrOutcomeUnknown.Error():
		return ErrOutcomeUnknown
	}
	return errors.New(stored)
}

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
	CallID string
	Index  int            // index of Action in the call's batch; -1 for the call's safety checks
	Action actions.Action // in model coordinates
	Mapped *screen.Mapped // in CSS pixels; nil for actions without coordinates
	Frame  screen.Frame   // the screenshot the model saw
	// Element frames, in pixels of Frame's image, the element that an
	// element reference of the action named (nil for a pixel action).
	Element      *actions.Rect
	SafetyChecks []SafetyCheck // provider-raised checks, for Index -1
	ModelText    string        // the model's own words for this turn
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

	// OnIntent, when set, records that a call is about to act on the
	// display (see ExecutorConfig.OnIntent), so that a run resumed after
	// a crash does not perform it again (Resume.Begun).
	OnIntent func(ctx context.Context, callID string) error

	// OnTurn, when set, sees each model turn before any of its calls runs,
	// as every record must show it: secret texts masked (see
	// Executor.Prepare) and secret values redacted. r redacts what the
	// caller stores besides (a model's saved conversation).
	OnTurn func(t Turn, r Redactor)

	// Inspector tells whether typed text is secret before it is recorded;
	// nil: the Display, if it is one (see ExecutorConfig).
	Inspector Inspector

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

	// Provider and ModelID name the model in metrics and spans
	// (spotter_model_request_duration_seconds and the model request's
	// span); an empty Provider says the model is no provider's (a
	// script, an executor session's client): its turns are not model
	// requests.
	Provider, ModelID string
	// SpanAttributes are set on the span of every turn (a session's id).
	SpanAttributes []attribute.KeyValue
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
	// Begun are the calls of Turn without a result whose intent was
	// recorded (Config.OnIntent): they began to act on the display before
	// the run stopped. None is performed again: each is answered with
	// ErrOutcomeUnknown and a fresh screenshot.
	Begun []string
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
	exec, err := NewExecutor(ExecutorConfig{Display: cfg.Display, Policy: cfg.Policy, Limits: cfg.Limits,
		Capture: cfg.Capture, ZoomMax: cfg.ZoomMax, RejectStale: cfg.RejectStale, ActionTimeout: cfg.ActionTimeout,
		Approver: cfg.Approver, Inspector: cfg.Inspector, Secrets: cfg.Secrets, Trace: cfg.Trace,
		OnEvent: cfg.OnEvent, OnIntent: cfg.OnIntent, Logger: cfg.Logger})
	if err != nil {
		return Outcome{}, err
	}
	l := &loop{
		cfg:        cfg,
		exec:       exec,
		log:        cmp.Or(cfg.Logger, slog.Default()),
		maxSteps:   cmp.Or(cfg.MaxSteps, 50),
		repeatWarn: cmp.Or(cfg.RepeatWarn, 3),
		repeatStop: cmp.Or(cfg.RepeatStop, 5),
	}
	start := time.Now()
	out := l.run(ctx)
	out.Elapsed = time.Since(start)
	out.Steps = l.steps
	l.mu.Lock()
	out.Calls, out.Failed, out.Usage = l.calls, l.failed, l.usage
	l.mu.Unlock()
	l.exec.Record(trace.Event{Type: trace.TypeRunEnd, Stop: string(out.Stop), Error: out.Err, Text: out.Text,
		Elapsed: out.Elapsed, Step: out.Steps})
	return out, nil
}

// loop asks the model and hands each of its calls to the Executor: the
// loop decides what to ask and when to stop; the Executor does, and
// records, everything that touches the display.
type loop struct {
	cfg        Config
	exec       *Executor
	log        *slog.Logger
	maxSteps   int
	repeatWarn int
	repeatStop int

	steps         int
	scrubbed      int    // secrets the model's conversation was last scrubbed of (scrub)
	lastKey       string // repeat detection: the previous call's key
	repeats       int    // how many times in a row lastKey was seen
	mu            sync.Mutex
	calls, failed int // guarded by mu: client calls run concurrently
	usage         Usage
}

func (l *loop) record(e trace.Event) { l.exec.Record(e) }

func (l *loop) run(ctx context.Context) Outcome {
	var in Input
	if rs := l.cfg.Resume; rs != nil {
		l.exec.Remember(rs.Frames)
		l.steps = rs.Step
		l.record(trace.Event{Type: trace.TypeNote, Step: l.steps, Text: fmt.Sprintf("resumed at step %d with %d of %d calls answered",
			rs.Step, len(rs.Done), len(rs.Turn.Calls))})
		t := l.startTurn(ctx, rs.Turn, time.Now(), time.Time{}, nil)
		t.span.SetAttributes(attribute.Bool("spotter.resumed", true))
		results, out, stop := l.answer(t.ctx, rs.Turn, rs.Done)
		t.end(out)
		if stop {
			return out
		}
		in = Input{Results: results}
	} else {
		shot, name, err := l.exec.Screenshot(ctx, ActorModel)
		if err != nil {
			l.record(trace.Event{Type: trace.TypeRunStart, Task: l.cfg.Task, Model: l.cfg.ModelName, Error: err.Error()})
			return Outcome{Stop: StopError, Err: fmt.Sprintf("first screenshot: %v", err)}
		}
		page := shot.Log // for the record only
		shot.Log = screen.PageLog{}
		l.record(trace.Event{Type: trace.TypeRunStart, Task: l.cfg.Task, Model: l.cfg.ModelName, Shot: name, Frame: shot.Frame, Page: page})
		in = Input{Task: l.cfg.Task, Shot: &shot}
	}
	for {
		if err := ctx.Err(); err != nil {
			return Outcome{Stop: StopError, Err: context.Cause(ctx).Error()}
		}
		if err := l.exec.TraceErr(); err != nil {
			return Outcome{Stop: StopError, Err: fmt.Sprintf("trace: %v", err)}
		}
		if l.steps >= l.maxSteps {
			return Outcome{Stop: StopMaxSteps, Err: fmt.Sprintf("step cap of %d reached", l.maxSteps)}
		}
		l.steps++
		t0 := time.Now()
		l.scrub()
		turn, err := l.cfg.Model.Next(ctx, l.toModel(in))
		t1 := time.Now()
		observeModel(l.cfg.Provider, l.cfg.ModelID, t1.Sub(t0), turn.Usage, err)
		if err != nil {
			if l.cfg.Provider != "" {
				l.startTurn(ctx, turn, t0, t1, err).end(Outcome{Stop: StopError, Err: err.Error()})
			}
			l.record(trace.Event{Type: trace.TypeError, Step: l.steps, Error: err.Error()})
			return Outcome{Stop: StopError, Err: fmt.Sprintf("model: %v", err)}
		}
		t := l.startTurn(ctx, turn, t0, t1, nil)
		l.addUsage(turn.Usage)
		turn = l.prepare(t.ctx, turn)
		l.record(trace.Event{Type: trace.TypeModelTurn, Step: l.steps, Text: turn.Text, Stop: string(turn.Stop),
			Usage: trace.Usage(turn.Usage), Elapsed: time.Since(t0)})
		if len(turn.Calls) == 0 {
			stop := cmp.Or(turn.Stop, StopEndTurn)
			if stop == StopToolUse { // a tool_use turn with no calls: nothing to answer
				stop = StopEndTurn
			}
			out := Outcome{Stop: stop, Text: turn.Text}
			t.end(out)
			return out
		}
		results, out, stop := l.answer(t.ctx, turn, nil)
		t.end(out)
		if stop {
			return out
		}
		in = Input{Results: results}
	}
}

// turnSpan is a turn being answered: its span, and when it began.
type turnSpan struct {
	ctx   context.Context
	span  oteltrace.Span
	start time.Time
	log   *slog.Logger
	step  int
}

// startTurn starts the span of a turn of the model (and the span of its
// request to the model, t0 to t1, when the model is a provider's). A turn
// a client brought (Turn.Trace: an executor call) continues the client's
// trace from when it arrived, t1; a resumed turn (zero t1) begins now.
func (l *loop) startTurn(ctx context.Context, turn Turn, t0, t1 time.Time, err error) turnSpan {
	start := t0
	if turn.Trace.IsValid() {
		ctx = oteltrace.ContextWithSpanContext(ctx, turn.Trace)
		start = t1
	}
	attrs := append([]attribute.KeyValue{attribute.Int("spotter.step", l.steps)}, l.cfg.SpanAttributes...)
	tctx, span := tracer.Start(ctx, SpanTurn, oteltrace.WithTimestamp(start), oteltrace.WithAttributes(attrs...))
	if l.cfg.Provider != "" && !t1.IsZero() {
		_, ms := tracer.Start(tctx, SpanModelRequest, oteltrace.WithTimestamp(t0), oteltrace.WithAttributes(
			attribute.String("gen_ai.provider.name", l.cfg.Provider),
			attribute.String("gen_ai.request.model", l.cfg.ModelID),
			attribute.Int("gen_ai.usage.input_tokens", turn.Usage.InputTokens),
			attribute.Int("gen_ai.usage.output_tokens", turn.Usage.OutputTokens)))
		if turn.Stop != "" {
			ms.SetAttributes(attribute.String("spotter.stop", string(turn.Stop)))
		}
		endSpan(ms, err, oteltrace.WithTimestamp(t1))
	}
	return turnSpan{ctx: tctx, span: span, start: start, log: l.log, step: l.steps}
}

// end ends the turn's span and logs it (at Info); out, when the run
// stops, says how.
func (t turnSpan) end(out Outcome) {
	elapsed := time.Since(t.start)
	metricStep.Observe(elapsed.Seconds())
	t.log.InfoContext(t.ctx, "turn", "step", t.step, "elapsed", elapsed.Round(time.Millisecond), "stop", out.Stop)
	if out.Stop != "" {
		t.span.SetAttributes(attribute.String("spotter.stop", string(out.Stop)))
	}
	var err error
	if out.Err != "" {
		err = errors.New(out.Err)
	}
	endSpan(t.span, err)
}

// prepare decides the secrets of turn's display calls before anything
// about them is recorded, and shows the turn to OnTurn.
func (l *loop) prepare(ctx context.Context, turn Turn) Turn {
	var display []Call
	var at []int
	for i, c := range turn.Calls {
		if !l.isClient(c) {
			display = append(display, c)
			at = append(at, i)
		}
	}
	prepared := l.exec.Prepare(ctx, display)
	turn.Calls = append([]Call(nil), turn.Calls...)
	for k, i := range at {
		turn.Calls[i] = prepared[k]
	}
	if l.cfg.OnTurn != nil {
		l.cfg.OnTurn(l.exec.MaskTurn(turn), l.exec.Redactor())
	}
	return turn
}

func (l *loop) isClient(c Call) bool {
	return l.cfg.Client != nil && c.DecodeErr == nil && l.cfg.Client.Has(c.Name)
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
	for i, c := range turn.Calls {
		if r, ok := answered[c.ID]; ok {
			results[i] = r
			continue
		}
		if l.isClient(c) {
			wg.Go(func() { results[i] = l.clientCall(cctx, turn, c) })
		}
	}
	for i, c := range turn.Calls {
		if _, ok := answered[c.ID]; ok || l.isClient(c) {
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
		Input: validJSON(c.Input), Client: true, Actor: actorName(ActorClient)})
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

// call answers one display call through the Executor. A non-empty
// StopReason ends the run.
func (l *loop) call(ctx context.Context, turn Turn, c Call) (Result, StopReason) {
	l.count(false)
	o := Options{Actor: ActorModel, Step: l.steps, ModelText: turn.Text, Prepared: true}
	var stop StopReason
	switch {
	case l.countRepeat(c):
		o.Refuse = fmt.Errorf("the same call was repeated %d times in a row; the run is stopped", l.repeats)
		stop = StopRepeat
	case turn.Stop == StopMaxTokens && c.DecodeErr == nil:
		o.Refuse = ErrTruncated
	case l.cfg.Resume != nil && slices.Contains(l.cfg.Resume.Begun, c.ID):
		o.Refuse = ErrOutcomeUnknown
	case l.repeats >= l.repeatWarn:
		o.Notes = append(o.Notes, fmt.Sprintf("You have sent this exact call %d times in a row. If the screen is not changing, try something else.", l.repeats))
	}
	r := l.exec.Do(ctx, c, o)
	if r.Err != nil {
		l.count(true)
	}
	return r, stop
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
