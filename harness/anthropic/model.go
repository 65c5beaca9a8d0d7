package anthropic

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/internal/browsertool"
	"github.com/spotter-harness/spotter/harness/internal/retry"
	"github.com/spotter-harness/spotter/screen"
)

// Defaults of Config.
const (
	DefaultBaseURL    = "https://api.anthropic.com/"
	DefaultModel      = "claude-sonnet-4-5"
	DefaultMaxTokens  = 4096
	DefaultTimeout    = 10 * time.Minute
	DefaultMaxRetries = 2
	DefaultMaxPauses  = 3
)

// DefaultSystem is the system prompt when Config.System is empty.
const DefaultSystem = "You operate a computer through the computer tool to complete the user's task. " +
	"Every tool result holds a fresh screenshot taken after your action; coordinates are pixels of the " +
	"latest full screenshot. When the task is done, or cannot be done, stop calling tools and say so briefly."

// ToolName is the name of the computer tool.
const ToolName = "computer"

// BrowserToolName is the name of the browser tool (Config.Browser).
const BrowserToolName = browsertool.ToolName

// Config configures a Model. Each zero value means the documented default;
// only Display is required.
type Config struct {
	APIKey  string // sent as x-api-key; required unless BaseURL is set
	BaseURL string // default DefaultBaseURL
	Model   string // default DefaultModel

	// Display is the size of the image actually sent (after the model's
	// size rule, screen.RuleFor), declared as display_width_px and
	// display_height_px. Required.
	Display screen.Size
	// Tool is the computer tool version; default ToolVersionFor(Model).
	Tool ToolVersion
	// DisableZoom declares computer_20251124 without enable_zoom.
	DisableZoom bool
	// Tools are application-side tools, declared as custom tools (name,
	// description, input_schema) after the computer tool. A call to one
	// comes back as a Call with Input and no Actions; its Result.Output
	// (or Err, with is_error) is sent back as the tool_result's text.
	Tools []harness.ToolSpec
	// Browser declares a custom tool named "browser" after the computer
	// tool, for the browser actions the computer tool lacks: its input is
	// {"action": "list_tabs" | "switch_tab" | "close_tab" | "dialog" |
	// "upload", "tab", "accept", "text", "files"}, decoded into
	// actions.ListTabs, SwitchTab, CloseTab, Dialog and Upload, and
	// answered like a computer call (text and a fresh screenshot). Off by
	// default: only a browser display can run these actions.
	Browser bool
	// Context says which screenshots each request carries in full (the
	// newest few; older ones become a placeholder, replaced a chunk at a
	// time so that the prompt cache keeps matching) and whether an
	// unchanged screenshot is sent again. The zero value is
	// ctxpolicy's default.
	Context ctxpolicy.Policy

	System     string       // default DefaultSystem
	MaxTokens  int          // default DefaultMaxTokens
	HTTPClient *http.Client // default a new http.Client
	// Timeout bounds each HTTP attempt; default DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a
	// connection error, a timeout, a 408, 409, 429 or 5xx status (529
	// overloaded included), a response cut off part-way or a 2xx body that
	// is not a Messages API message, with exponential backoff that honours
	// retry-after-ms and retry-after; default DefaultMaxRetries, negative
	// means never. When the retries run out, Next's error says what each
	// attempt got ("the Anthropic API answered 429 Too Many Requests 3
	// times; giving up").
	MaxRetries int
	// RetryWait is the first backoff when the server names no wait; it
	// doubles with each retry (up to 30s). Default 500ms.
	RetryWait time.Duration
	// MaxPauses is how many times one Next re-sends a turn that stopped
	// with pause_turn before it returns StopPause; default
	// DefaultMaxPauses, negative means never.
	MaxPauses int
	Logger    *slog.Logger // default slog.Default()
}

// ConfigFromEnv reads Anthropic's environment variables through getenv
// (os.Getenv in cmd/): ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and
// ANTHROPIC_MODEL. The other fields keep their defaults.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:  getenv("ANTHROPIC_API_KEY"),
		BaseURL: getenv("ANTHROPIC_BASE_URL"),
		Model:   getenv("ANTHROPIC_MODEL"),
	}
}

// Model is a conversation with a Claude model that uses the computer tool.
// It implements harness.Model. Its methods may be called from several
// goroutines, but a conversation is sequential: each Next waits for the
// previous one.
type Model struct {
	cfg     Config
	version ToolVersion
	svc     anthropic.BetaMessageService
	tools   []anthropic.BetaToolUnionParam // the computer tool, then Config.Tools
	clients map[string]bool                // names of Config.Tools
	log     *slog.Logger

	mu      sync.Mutex
	history []anthropic.BetaMessageParam
	pending []pendingCall // calls of the last turn, waiting for results
	// isPaused says the last turn stopped with pause_turn; paused is its
	// content so far, which is not in history.
	isPaused bool
	paused   []anthropic.BetaContentBlockUnion
	cursor   *actions.Point   // the pointer in image pixels, if known
	win      ctxpolicy.Window // the images history holds (Config.Context)
}

// pendingCall is a call waiting for its result.
type pendingCall struct {
	id     string
	n      int            // actions in the call
	end    *actions.Point // where the call moves the pointer, if it does
	client bool           // a call of an application-side tool (Config.Tools)
}

// New returns a Model for cfg. It does no I/O.
func New(cfg Config) (*Model, error) {
	if cfg.Display.Empty() {
		return nil, fmt.Errorf("anthropic: Display %dx%d: the size of the screenshots sent is required", cfg.Display.W, cfg.Display.H)
	}
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, errors.New("anthropic: no API key (set ANTHROPIC_API_KEY)")
	}
	cfg.BaseURL = cmp.Or(cfg.BaseURL, DefaultBaseURL)
	cfg.Model = cmp.Or(cfg.Model, DefaultModel)
	cfg.Tool = cmp.Or(cfg.Tool, ToolVersionFor(cfg.Model))
	if err := cfg.Tool.check(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	cfg.System = cmp.Or(cfg.System, DefaultSystem)
	cfg.MaxTokens = cmp.Or(cfg.MaxTokens, DefaultMaxTokens)
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: MaxTokens %d is negative", cfg.MaxTokens)
	}
	if err := cfg.Context.Check(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.MaxRetries = max(cmp.Or(cfg.MaxRetries, DefaultMaxRetries), 0)
	cfg.MaxPauses = max(cmp.Or(cfg.MaxPauses, DefaultMaxPauses), 0)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	custom, clients, err := customTools(cfg.Tools)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	if cfg.Browser {
		if clients[BrowserToolName] {
			return nil, fmt.Errorf("anthropic: Tools: %q is the browser tool's name (Config.Browser)", BrowserToolName)
		}
		desc, schema := browsertool.Tool()
		raw, err := json.Marshal(schema)
		if err != nil {
			return nil, fmt.Errorf("anthropic: browser tool schema: %w", err)
		}
		custom = append([]anthropic.BetaToolUnionParam{{OfTool: &anthropic.BetaToolParam{Name: BrowserToolName,
			Description: anthropic.String(desc), InputSchema: param.Override[anthropic.BetaToolInputSchemaParam](json.RawMessage(raw))}}}, custom...)
	}
	log := cfg.Logger.With(logKeyProvider, "anthropic", logKeyModel, cfg.Model)
	// Retries happen in retry.Transport, which also retries garbage and
	// cut-off bodies and counts the attempts; the SDK's are off.
	hc := *cfg.HTTPClient
	hc.Transport = &retry.Transport{
		Base:    cfg.HTTPClient.Transport,
		Retries: cfg.MaxRetries,
		Wait:    cfg.RetryWait,
		Timeout: cfg.Timeout,
		Check:   checkMessage,
		API:     "the Anthropic API",
		Secrets: []string{cfg.APIKey},
		Log:     log,
	}
	// The SDK's NewClient would read the environment (ANTHROPIC_API_KEY,
	// profiles, ...); only cmd/ may, so the service gets explicit options.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(&hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Model{
		cfg:     cfg,
		version: cfg.Tool,
		svc:     anthropic.NewBetaMessageService(opts...),
		tools:   append([]anthropic.BetaToolUnionParam{toolParam(cfg)}, custom...),
		clients: clients,
		log:     log,
	}, nil
}

// checkMessage says whether a 2xx body is a Messages API message.
func checkMessage(body []byte) error {
	var msg struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Type != "message" || !bytes.HasPrefix(bytes.TrimSpace(msg.Content), []byte("[")) {
		return errors.New("a Messages API message")
	}
	return nil
}

// Log attribute keys.
const (
	logKeyProvider = "provider"
	logKeyModel    = "model"
	logKeyID       = "message_id"
	logKeyStop     = "stop_reason"
	logKeyCalls    = "calls"
	logKeyUsage    = "usage"
)

// ToolVersion returns the computer tool version m declares.
func (m *Model) ToolVersion() ToolVersion { return m.version }

func toolParam(cfg Config) anthropic.BetaToolUnionParam {
	w, h := int64(cfg.Display.W), int64(cfg.Display.H)
	cc := anthropic.NewBetaCacheControlEphemeralParam()
	switch cfg.Tool {
	case Computer20241022:
		return anthropic.BetaToolUnionParam{OfComputerUseTool20241022: &anthropic.BetaToolComputerUse20241022Param{
			DisplayWidthPx: w, DisplayHeightPx: h, CacheControl: cc}}
	case Computer20250124:
		return anthropic.BetaToolUnionParam{OfComputerUseTool20250124: &anthropic.BetaToolComputerUse20250124Param{
			DisplayWidthPx: w, DisplayHeightPx: h, CacheControl: cc}}
	}
	t := &anthropic.BetaToolComputerUse20251124Param{DisplayWidthPx: w, DisplayHeightPx: h, CacheControl: cc}
	if !cfg.DisableZoom {
		t.EnableZoom = anthropic.Bool(true)
	}
	return anthropic.BetaToolUnionParam{OfComputerUseTool20251124: t}
}

// Next sends in and returns the model's next turn. The first Input carries
// the task and the first screenshot; later ones exactly one Result per Call
// of the previous turn, in order (a Result's CallID, if set, must match),
// and may add a Task as further instructions. After StopPause, an empty
// Input resumes the paused turn; after StopEndTurn or StopRefusal, an Input
// with a Task continues the conversation.
//
// Next blocks for the HTTP round trips (with retries, each attempt bounded
// by Config.Timeout) and returns early when ctx is done. If it returns an
// error the conversation is as it was, so the same Input can be sent again.
// Its errors never hold the API key, even one the endpoint echoed.
func (m *Model) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	turn, err := m.next(ctx, in)
	return turn, retry.Scrubbed(err, m.cfg.APIKey)
}

func (m *Model) next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	base, cursor, win, err := m.prepare(in)
	if err != nil {
		return harness.Turn{}, err
	}
	replaced := win.Images > countImages(base)
	// A paused turn is sent back as the last, assistant message, and the
	// reply continues it.
	content := m.paused
	var (
		u    harness.Usage
		resp *anthropic.BetaMessage
	)
	for pauses := 0; ; pauses++ {
		msgs := base
		if a := assistant(content, true); len(a.Content) > 0 {
			msgs = append(slices.Clip(base), a)
		}
		resp, err = m.send(ctx, msgs, replaced)
		if err != nil {
			return harness.Turn{}, err
		}
		u = addUsage(u, usage(m.cfg.Model, resp.Usage))
		content = append(slices.Clip(content), resp.Content...)
		if resp.StopReason != anthropic.BetaStopReasonPauseTurn {
			break
		}
		if pauses >= m.cfg.MaxPauses {
			m.history, m.pending, m.cursor, m.win = base, nil, cursor, win
			m.isPaused, m.paused = true, content
			m.logTurn(ctx, resp, 0, u)
			return harness.Turn{Text: text(content), Stop: harness.StopPause, Usage: u}, nil
		}
	}

	turn := harness.Turn{Text: text(content), Usage: u}
	switch resp.StopReason {
	case anthropic.BetaStopReasonToolUse, anthropic.BetaStopReasonEndTurn, anthropic.BetaStopReasonStopSequence:
		turn.Stop = harness.StopEndTurn
	case anthropic.BetaStopReasonMaxTokens, anthropic.BetaStopReasonModelContextWindowExceeded:
		turn.Stop = harness.StopMaxTokens
	case anthropic.BetaStopReasonRefusal:
		// Anthropic advises dropping a refused turn from the conversation,
		// or later requests may be refused too: its calls never run.
		turn.Stop = harness.StopRefusal
		if d := resp.StopDetails; d.Explanation != "" || d.Category != "" {
			turn.Text = strings.TrimSpace(turn.Text + fmt.Sprintf("\n[refused: %s %s]", d.Category, d.Explanation))
		}
		m.commit(base, nil, cursor, win)
		m.logTurn(ctx, resp, 0, u)
		return turn, nil
	default:
		return harness.Turn{}, fmt.Errorf("%w %q (message %s)", ErrStop, resp.StopReason, resp.ID)
	}

	var pending []pendingCall
	at := cursor // where each call starts, if the ones before it run
	for _, c := range content {
		if c.Type != "tool_use" {
			continue
		}
		call := decodeToolUse(c, m.decoder(at), m.clients, m.cfg.Browser, turn.Stop == harness.StopMaxTokens)
		end := pointerAfter(call.Actions)
		if end != nil {
			at = end
		}
		pending = append(pending, pendingCall{id: call.ID, n: len(call.Actions), end: end, client: call.Input != nil})
		turn.Calls = append(turn.Calls, call)
	}
	if len(turn.Calls) > 0 && turn.Stop == harness.StopEndTurn {
		turn.Stop = harness.StopToolUse // calls must be answered whatever the stop reason said
	}
	msgs := base
	if a := assistant(content, false); len(a.Content) > 0 {
		// The API refuses an empty assistant message; an empty reply is left out.
		msgs = append(slices.Clip(base), a)
	}
	m.commit(msgs, pending, cursor, win)
	m.logTurn(ctx, resp, len(turn.Calls), u)
	return turn, nil
}

// commit makes a finished turn part of the conversation.
func (m *Model) commit(history []anthropic.BetaMessageParam, pending []pendingCall, cursor *actions.Point, win ctxpolicy.Window) {
	m.history, m.pending, m.cursor, m.win = history, pending, cursor, win
	m.isPaused, m.paused = false, nil
}

func (m *Model) logTurn(ctx context.Context, resp *anthropic.BetaMessage, calls int, u harness.Usage) {
	m.log.DebugContext(ctx, "anthropic turn", logKeyID, resp.ID, logKeyStop, string(resp.StopReason),
		logKeyCalls, calls, slog.Group(logKeyUsage, "input", u.InputTokens, "output", u.OutputTokens,
			"cached", u.CachedTokens, "cost_usd_estimate", u.CostUSD))
}

// decoder is the Decoder of m's computer tool, with the pointer at cursor.
func (m *Model) decoder(cursor *actions.Point) Decoder {
	return Decoder{Version: m.version, NoZoom: m.cfg.DisableZoom, Cursor: cursor}
}

// decodeToolUse turns one tool_use block into a Call: a computer call
// decoded by d, a browser call if browser (Config.Browser), or a call of
// one of the clients' tools, whose input is kept as it came (Call.Input,
// never nil for a client call).
func decodeToolUse(c anthropic.BetaContentBlockUnion, d Decoder, clients map[string]bool, browser, truncated bool) harness.Call {
	call := harness.Call{ID: c.ID, Name: c.Name, Space: screen.Image, Raw: json.RawMessage(c.RawJSON())}
	switch {
	case clients[c.Name]:
		call.Input = json.RawMessage(cmp.Or(strings.TrimSpace(string(c.Input)), "{}"))
		if truncated {
			call.DecodeErr = ErrTruncated
		}
	case truncated:
		call.DecodeErr = ErrTruncated
	case browser && c.Name == BrowserToolName:
		a, err := browsertool.DecodeTool(c.Input)
		if call.DecodeErr = err; err == nil {
			call.Actions = []actions.Action{a}
		}
	case c.Name != ToolName:
		call.DecodeErr = fmt.Errorf("%w %q: the tools are %s", ErrUnknownTool, clip(c.Name), toolNames(clients, browser))
	default:
		call.Actions, call.DecodeErr = d.Decode(c.Input)
	}
	return call
}

// toolNames lists the declared tools, for an error message.
func toolNames(clients map[string]bool, browser bool) string {
	names := []string{ToolName}
	if browser {
		names = append(names, BrowserToolName)
	}
	for n := range clients {
		names = append(names, n)
	}
	slices.Sort(names[1:])
	return strings.Join(names, ", ")
}

// customTools declares the application-side tools as custom tools.
func customTools(specs []harness.ToolSpec) ([]anthropic.BetaToolUnionParam, map[string]bool, error) {
	var tools []anthropic.BetaToolUnionParam
	names := map[string]bool{}
	for i, t := range specs {
		switch {
		case t.Name == "":
			return nil, nil, fmt.Errorf("Tools[%d] has no name", i)
		case t.Name == ToolName:
			return nil, nil, fmt.Errorf("Tools[%d]: %q is the computer tool's name", i, t.Name)
		case names[t.Name]:
			return nil, nil, fmt.Errorf("Tools[%d]: %q is declared twice", i, t.Name)
		}
		schema, err := schemaObject(t.InputSchema)
		if err != nil {
			return nil, nil, fmt.Errorf("Tools[%d] %q: input_schema %v", i, t.Name, err)
		}
		p := &anthropic.BetaToolParam{Name: t.Name, InputSchema: param.Override[anthropic.BetaToolInputSchemaParam](schema)}
		if t.Description != "" {
			p.Description = anthropic.String(t.Description)
		}
		names[t.Name] = true
		tools = append(tools, anthropic.BetaToolUnionParam{OfTool: p})
	}
	return tools, names, nil
}

// schemaObject checks that raw is a JSON Schema object of type "object"
// (or no type, which gets "object"); empty means any object.
func schemaObject(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("is not a JSON object")
	}
	if t, ok := obj["type"]; ok && string(bytes.TrimSpace(t)) != `"object"` {
		return nil, fmt.Errorf("has type %s, want \"object\"", clip(string(t)))
	}
	obj["type"] = json.RawMessage(`"object"`)
	return json.Marshal(obj)
}

// prepare builds the conversation to send for in, ending with a user
// message, with the images Config.Context no longer keeps replaced, and
// returns it with the cursor position after the results in it and the
// images it holds.
func (m *Model) prepare(in harness.Input) ([]anthropic.BetaMessageParam, *actions.Point, ctxpolicy.Window, error) {
	msgs, cursor, win, err := m.add(in)
	if err != nil {
		return nil, nil, win, err
	}
	return replaceImages(msgs, win.Replace(m.cfg.Context, countImages(msgs))), cursor, win, nil
}

// add builds the conversation to send for in, ending with a user message.
func (m *Model) add(in harness.Input) ([]anthropic.BetaMessageParam, *actions.Point, ctxpolicy.Window, error) {
	cursor, win := m.cursor, m.win
	if m.isPaused {
		if in.Task != "" || in.Shot != nil || len(in.Results) > 0 {
			return nil, nil, win, fmt.Errorf("%w: the last turn paused; send an empty Input to resume it", ErrInput)
		}
		return m.history, cursor, win, nil
	}
	var blocks []anthropic.BetaContentBlockParamUnion
	switch {
	case len(m.pending) > 0:
		if len(in.Results) != len(m.pending) {
			return nil, nil, win, fmt.Errorf("%w: %d results for the %d calls of the last turn", ErrInput, len(in.Results), len(m.pending))
		}
		if in.Shot != nil {
			return nil, nil, win, fmt.Errorf("%w: a Shot is for the first turn only; screenshots go in Results", ErrInput)
		}
		for i, r := range in.Results {
			p := m.pending[i]
			if r.CallID != "" && r.CallID != p.id {
				return nil, nil, win, fmt.Errorf("%w: result %d is for call %q, want %q", ErrInput, i, r.CallID, p.id)
			}
			r, err := seen(p, r, m.cfg.Context, &win, m.cfg.Display)
			if err != nil {
				return nil, nil, win, fmt.Errorf("result %d (call %s): %w", i, p.id, err)
			}
			b, err := toolResult(p, r, m.cfg.Display)
			if err != nil {
				return nil, nil, win, fmt.Errorf("result %d (call %s): %w", i, p.id, err)
			}
			blocks = append(blocks, b)
			cursor = cursorAfter(cursor, p, r)
		}
	case len(in.Results) > 0:
		return nil, nil, win, fmt.Errorf("%w: %d results but the last turn had no calls", ErrInput, len(in.Results))
	case in.Task == "" && in.Shot == nil:
		return nil, nil, win, fmt.Errorf("%w: nothing to send (no task, screenshot or results)", ErrInput)
	case in.Shot != nil && checkShot(in.Shot, true, m.cfg.Display) == nil && !win.Shot(m.cfg.Context, in.Shot.Data):
		blocks = append(blocks, anthropic.NewBetaTextBlock(ctxpolicy.Unchanged))
	case in.Shot != nil:
		img, err := image(in.Shot, true, m.cfg.Display)
		if err != nil {
			return nil, nil, win, fmt.Errorf("first screenshot: %w", err)
		}
		blocks = append(blocks, img)
	}
	if in.Task != "" {
		blocks = append(blocks, anthropic.NewBetaTextBlock(in.Task))
	}
	msgs := slices.Clip(m.history)
	if n := len(msgs); n > 0 && msgs[n-1].Role == anthropic.BetaMessageParamRoleUser {
		// After a refusal or an empty reply the conversation ends with a
		// user message: add to it rather than send two in a row.
		last := msgs[n-1]
		last.Content = append(slices.Clip(last.Content), blocks...)
		return append(msgs[:n-1:n-1], last), cursor, win, nil
	}
	return append(msgs, anthropic.NewBetaUserMessage(blocks...)), cursor, win, nil
}

// cursorAfter returns where the pointer is after call p ran as r says.
func cursorAfter(cursor *actions.Point, p pendingCall, r harness.Result) *actions.Point {
	switch {
	case r.Cursor != nil:
		c := *r.Cursor
		return &c
	case p.end == nil: // clicks and scrolls at the cursor leave it there
		return cursor
	case r.Err == nil || r.Ran >= p.n:
		return p.end
	}
	return nil // a move failed, maybe part way: the pointer could be anywhere
}

// toolResult answers call p with r. display is the declared display size
// that full screenshots must have; empty means any size.
func toolResult(p pendingCall, r harness.Result, display screen.Size) (anthropic.BetaContentBlockParamUnion, error) {
	if p.client {
		return clientResult(p, r), nil
	}
	var lines []string
	if r.Err != nil {
		lines = append(lines, "Error: "+r.Err.Error())
		if r.Ran > 0 && p.n > 1 && !errors.Is(r.Err, harness.ErrOutcomeUnknown) {
			lines = append(lines, fmt.Sprintf("%d of the %d actions ran before the error.", r.Ran, p.n))
		}
	}
	if r.Cursor != nil {
		lines = append(lines, fmt.Sprintf("X=%d,Y=%d", int(math.Round(r.Cursor.X)), int(math.Round(r.Cursor.Y))))
	}
	lines = append(lines, r.Notes...)
	var content []anthropic.BetaToolResultBlockParamContentUnion
	// A call that failed before any action ran left the screen as the
	// model last saw it: no image. Otherwise the screen may have changed.
	if r.MayHaveActed() {
		shot, full := r.Shot, true
		if r.Zoom != nil {
			shot, full = r.Zoom, false
		}
		if shot != nil {
			lines = append(lines, shot.Events...)
			img, err := image(shot, full, display)
			if err != nil {
				return anthropic.BetaContentBlockParamUnion{}, err
			}
			content = append(content, anthropic.BetaToolResultBlockParamContentUnion{OfImage: img.OfImage})
		}
	}
	lines = slices.DeleteFunc(lines, func(s string) bool { return strings.TrimSpace(s) == "" })
	if len(content) == 0 && len(lines) == 0 {
		lines = []string{"Done. (No screenshot was taken.)"}
	}
	if len(lines) > 0 {
		text := anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: strings.Join(lines, "\n")}}
		content = append([]anthropic.BetaToolResultBlockParamContentUnion{text}, content...)
	}
	b := anthropic.BetaToolResultBlockParam{ToolUseID: p.id, Content: content}
	if r.Err != nil {
		b.IsError = anthropic.Bool(true)
	}
	return anthropic.BetaContentBlockParamUnion{OfToolResult: &b}, nil
}

// clientResult answers a call of an application-side tool: its output as
// text, or its error with is_error.
func clientResult(p pendingCall, r harness.Result) anthropic.BetaContentBlockParamUnion {
	text := r.Output
	if r.Err != nil {
		text = "Error: " + r.Err.Error()
	}
	b := anthropic.BetaToolResultBlockParam{ToolUseID: p.id}
	if strings.TrimSpace(text) != "" { // the API refuses empty text blocks
		b.Content = []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: text}}}
	}
	if r.Err != nil {
		b.IsError = anthropic.Bool(true)
	}
	return anthropic.BetaContentBlockParamUnion{OfToolResult: &b}
}

// image makes an image block of s. A full screenshot must have the
// declared display size, unless display is empty.
func image(s *screen.Shot, full bool, display screen.Size) (anthropic.BetaContentBlockParamUnion, error) {
	if err := checkShot(s, full, display); err != nil {
		return anthropic.BetaContentBlockParamUnion{}, err
	}
	return anthropic.NewBetaImageBlock(anthropic.BetaBase64ImageSourceParam{
		Data:      base64.StdEncoding.EncodeToString(s.Data),
		MediaType: anthropic.BetaBase64ImageSourceMediaType(s.Frame.Format.MIME()),
	}), nil
}

// checkShot says why s cannot be sent, if it cannot: no data, or a full
// screenshot that does not have the declared display size.
func checkShot(s *screen.Shot, full bool, display screen.Size) error {
	if len(s.Data) == 0 {
		return fmt.Errorf("screenshot %s has no image data", s.Frame.ID)
	}
	if sent := s.Frame.Sent; full && !sent.Empty() && !display.Empty() && sent != display {
		return fmt.Errorf("%w: screenshot %s is %dx%d, the tool declares %dx%d",
			ErrDisplaySize, s.Frame.ID, sent.W, sent.H, display.W, display.H)
	}
	return nil
}

// send makes one Messages request (with the SDK's retries).
// replaced says that some of msgs' images have been replaced by the
// placeholder, which moves a cache breakpoint (cacheBreakpoints).
func (m *Model) send(ctx context.Context, msgs []anthropic.BetaMessageParam, replaced bool) (*anthropic.BetaMessage, error) {
	params := anthropic.BetaMessageNewParams{
		Model:     anthropic.Model(m.cfg.Model),
		MaxTokens: int64(m.cfg.MaxTokens),
		System: []anthropic.BetaTextBlockParam{{
			Text: m.cfg.System, CacheControl: anthropic.NewBetaCacheControlEphemeralParam()}},
		Tools:    m.tools,
		Messages: cacheBreakpoints(msgs, replaced),
		Betas:    []anthropic.AnthropicBeta{anthropic.AnthropicBeta(m.version.Beta())},
	}
	resp, err := m.svc.New(ctx, params)
	if err == nil {
		return resp, nil
	}
	var (
		apiErr   *anthropic.Error
		retryErr *retry.Error
	)
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("messages request: %w", context.Cause(ctx))
	case errors.As(err, &apiErr):
		return nil, fmt.Errorf("messages request: %w: %s", ErrAPI, describe(apiErr))
	case errors.As(err, &retryErr):
		return nil, fmt.Errorf("messages request: %w: %w", ErrAPI, retryErr)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("messages request: timed out after %v: %w", m.cfg.Timeout, err)
	}
	return nil, fmt.Errorf("messages request: %v", err)
}

// describe says what an API error was, without the request.
func describe(e *anthropic.Error) string {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(e.RawJSON()), &body)
	s := fmt.Sprintf("status %d", e.StatusCode)
	if body.Error.Type != "" {
		s += " " + body.Error.Type
	}
	if body.Error.Message != "" {
		s += ": " + clip(body.Error.Message)
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// assistant makes the assistant message that content came in, to send
// back. Empty text blocks, which the API refuses, are left out. If final,
// the message ends the request (a paused turn to continue), and the API
// refuses trailing whitespace there: it is trimmed.
func assistant(content []anthropic.BetaContentBlockUnion, final bool) anthropic.BetaMessageParam {
	p := anthropic.BetaMessageParam{Role: anthropic.BetaMessageParamRoleAssistant}
	for i, c := range content {
		if c.Type == "text" && final && i == len(content)-1 {
			if t := strings.TrimRightFunc(c.Text, unicode.IsSpace); t != "" {
				p.Content = append(p.Content, anthropic.NewBetaTextBlock(t))
			}
			continue
		}
		if c.Type == "text" && c.Text == "" {
			continue
		}
		p.Content = append(p.Content, c.ToParam())
	}
	return p
}

// text joins the text blocks of content.
func text(content []anthropic.BetaContentBlockUnion) string {
	var parts []string
	for _, c := range content {
		if c.Type == "text" && strings.TrimSpace(c.Text) != "" {
			parts = append(parts, strings.TrimSpace(c.Text))
		}
	}
	return strings.Join(parts, "\n")
}
