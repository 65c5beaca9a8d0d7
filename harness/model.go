package harness

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// A Model proposes the next tool calls. Adapters for each provider
// (harness/script, and later Anthropic, OpenAI, Gemini) implement it and keep
// the provider's own conversation state; the loop only sees canonical data.
type Model interface {
	// Next sends in to the model and returns its next turn. The first call
	// carries the task and the first screenshot; later ones carry exactly one
	// Result for every Call of the previous turn, in the same order.
	Next(ctx context.Context, in Input) (Turn, error)
}

// Input is what the loop sends to the model.
type Input struct {
	Task    string       // first turn only
	Shot    *screen.Shot // first turn only: the initial screenshot
	Results []Result     // one per Call of the previous turn
}

// StopReason says why a turn ended.
type StopReason string

const (
	StopToolUse   StopReason = "tool_use"   // the turn asks for calls
	StopEndTurn   StopReason = "end_turn"   // the model is done
	StopMaxTokens StopReason = "max_tokens" // truncated; any call in it must not run
	StopRefusal   StopReason = "refusal"
	StopPause     StopReason = "pause_turn" // the provider paused; send the turn back to continue
	StopMaxSteps  StopReason = "max_steps"  // set by the loop, never by a model
	StopRepeat    StopReason = "repeat"     // set by the loop: the model kept repeating itself
	StopError     StopReason = "error"      // set by the loop
)

// Turn is one reply of the model.
type Turn struct {
	Text  string // the model's own words, for the trace and the approval panel
	Calls []Call
	Stop  StopReason
	Usage Usage
	// Trace, when valid, is the trace of the request that brought this
	// turn (an executor call a client posted, with its traceparent): the
	// turn's span continues it, from the moment the turn arrived. Zero:
	// the turn's span continues the run's context and covers the model's
	// request.
	Trace trace.SpanContext
}

// Usage is what a turn cost.
type Usage struct {
	InputTokens  int     `json:"input_tokens,omitzero"`
	OutputTokens int     `json:"output_tokens,omitzero"`
	CachedTokens int     `json:"cached_tokens,omitzero"`
	CostUSD      float64 `json:"cost_usd,omitzero"`
}

// Call is one tool call proposed by the model, already decoded into
// canonical actions by the adapter.
type Call struct {
	ID      string           // the provider's id for pairing: tool_use_id, call_id, functionCall id
	Name    string           // the tool name the model used
	Actions []actions.Action // the batch, in model coordinates
	Space   screen.Space     // the coordinate space of Actions
	// FrameID names the screenshot the coordinates refer to; empty means
	// the latest full (unzoomed) screenshot sent to the model.
	FrameID string
	// DecodeErr is set when the adapter could not decode the call (bad JSON,
	// unknown action, missing fields). The loop answers it as an error
	// result without running anything.
	DecodeErr error
	// SafetyChecks are provider-raised checks that need a human's approval
	// before the call may run (OpenAI pending_safety_checks, Gemini
	// safety_decision).
	SafetyChecks []SafetyCheck
	// Input holds the arguments of an application-side tool call (see
	// ToolSpec), as the model sent them; display calls leave it empty.
	Input json.RawMessage
	Raw   json.RawMessage // the call as the provider sent it, for the trace
}

// ToolSpec declares an application-side tool: the client that started the
// run executes it, not the display. Adapters offer these to the model next
// to the computer tool, decode calls to them into Call.Input, and send
// Result.Output (or Result.Err) back as the tool's result.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"` // a JSON Schema object; empty: any object
}

// Stateful is implemented by Models whose conversation can be saved and
// restored, so that a session survives a restart of the process. The state
// is opaque bytes (JSON in practice) that only the same adapter reads.
type Stateful interface {
	MarshalState() ([]byte, error)
	UnmarshalState([]byte) error
}

// SafetyCheck is a provider's request for confirmation.
type SafetyCheck struct {
	ID      string `json:"id"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Result answers one Call.
type Result struct {
	CallID string
	Shot   *screen.Shot // a fresh screenshot, taken after the batch; nil only if the display is gone
	// Ran counts the actions of the batch that completed.
	Ran int
	// Err says why the call failed, in words meant for the model. A nil Err
	// means every action ran.
	Err error
	// Notes are things the model should know that are not failures: the
	// call referred to an older screenshot, a tab opened, the page did not
	// settle in time.
	Notes []string
	// Cursor is the pointer position in the image space of Shot, for
	// cursor_position.
	Cursor *actions.Point
	// Zoom holds the region capture for a zoom action.
	Zoom *screen.Shot
	// Output is an application-side tool's answer; display calls leave it
	// empty and carry Shot.
	Output string
	// Acknowledged lists the safety checks a human approved.
	Acknowledged []SafetyCheck
	Elapsed      time.Duration

	cursorCSS *actions.Point // cursor_position's answer until the fresh screenshot maps it
}

// Display is where actions happen: screen/cdp provides one, and later
// backends (VNC, Playwright) do too.
type Display interface {
	// Capture waits (bounded) for the display to settle and returns a
	// screenshot as o asks.
	Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error)
	// Perform runs one mapped action. It returns when the input has been
	// delivered, not when the display has settled.
	Perform(ctx context.Context, m screen.Mapped) error
}
