package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/internal/retry"
	"github.com/spotter-harness/spotter/screen"
)

// Log attribute keys.
const (
	logKeyResponse = "response_id"
	logKeyModel    = "model"
	logKeyCallID   = "call_id"
)

// Model talks to the OpenAI Responses API. It implements harness.Model and
// keeps the conversation: every item sent and received, in order. A Model
// is safe for concurrent use, but calls to Next are serialized: a
// conversation has one next turn.
type Model struct {
	cfg   Config
	svc   responses.ResponseService
	log   *slog.Logger
	tools []responses.ToolUnionParam
	// clients names the application-side tools (Config.Tools).
	clients map[string]bool
	price   Price
	known   bool // price is known

	mu      sync.Mutex
	items   []item           // the conversation so far, as the next request sends it
	pending []pending        // the calls of the last turn, to be answered in order
	last    picture          // the last screenshot sent, for a Result without one
	win     ctxpolicy.Window // the images items hold (Config.Context)
}

// item is one input item. An item whose image is still sent in full also
// holds the item as it is sent once Config.Context no longer keeps that
// image.
type item struct {
	p    responses.ResponseInputItemUnionParam
	omit *responses.ResponseInputItemUnionParam
}

// pending is a call of the last turn.
type pending struct {
	id       string
	function bool // a function_call, not a computer_call
	client   bool // a function_call of an application-side tool
	actions  int  // how many actions the call had
	checks   []harness.SafetyCheck
}

// New returns a Model for cfg. It does not contact the API.
func New(cfg Config) (*Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	// Retries happen in retry.Transport, which also retries garbage and
	// cut-off bodies and counts the attempts; the SDK's are off.
	hc.Transport = &retry.Transport{
		Base:    hc.Transport,
		Retries: cfg.MaxRetries,
		Wait:    cfg.RetryWait,
		Timeout: cfg.Timeout,
		Check:   checkResponse,
		API:     "the OpenAI API",
		Secrets: []string{cfg.APIKey},
		Log:     cfg.Logger.With(logKeyModel, cfg.Model),
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(&hc),
		option.WithMaxRetries(0),
	}
	if cfg.Organization != "" {
		opts = append(opts, option.WithOrganization(cfg.Organization))
	}
	if cfg.Project != "" {
		opts = append(opts, option.WithProject(cfg.Project))
	}
	m := &Model{
		cfg:     cfg,
		svc:     responses.NewResponseService(opts...),
		log:     cfg.Logger.With(logKeyModel, cfg.Model),
		tools:   tools(cfg),
		clients: map[string]bool{},
	}
	for _, t := range cfg.Tools {
		m.clients[t.Name] = true
	}
	if cfg.Price != nil {
		m.price, m.known = *cfg.Price, true
	} else {
		m.price, m.known = priceFor(cfg.Model)
	}
	return m, nil
}

// checkResponse says whether a 2xx body is a Responses API response.
func checkResponse(body []byte) error {
	var r struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(body, &r) != nil || !strings.HasPrefix(strings.TrimSpace(string(r.Output)), "[") {
		return errors.New("a Responses API response")
	}
	return nil
}

// tools declares the computer tool and the extension functions.
func tools(cfg Config) []responses.ToolUnionParam {
	var ts []responses.ToolUnionParam
	if cfg.Tool == ToolPreview {
		ts = append(ts, responses.ToolUnionParam{OfComputerUsePreview: &responses.ComputerUsePreviewToolParam{
			DisplayWidth:  int64(cfg.Display.W),
			DisplayHeight: int64(cfg.Display.H),
			Environment:   responses.ComputerUsePreviewToolEnvironment(cfg.Environment),
		}})
	} else {
		t := responses.NewComputerToolParam()
		ts = append(ts, responses.ToolUnionParam{OfComputer: &t})
	}
	for _, name := range cfg.Functions {
		f := functionSchemas[name]
		ts = append(ts, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name:        name,
			Description: param.NewOpt(f.description),
			Parameters:  f.parameters,
			// Strict schemas need every field required; mouse_down's x
			// and y are optional, and DecodeAction checks arguments anyway.
			Strict: param.NewOpt(false),
		}})
	}
	for _, t := range cfg.Tools {
		f := &responses.FunctionToolParam{Name: t.Name, Parameters: schemaOf(t.InputSchema), Strict: param.NewOpt(false)}
		if t.Description != "" {
			f.Description = param.NewOpt(t.Description)
		}
		ts = append(ts, responses.ToolUnionParam{OfFunction: f})
	}
	return ts
}

// schemaOf is a tool's input schema as function parameters; empty (or a
// schema that is not an object, which Config.withDefaults refuses) means
// any object.
func schemaOf(raw json.RawMessage) map[string]any {
	var s map[string]any
	if json.Unmarshal(raw, &s) != nil || s == nil {
		s = map[string]any{"type": "object"}
	}
	return s
}

// Next sends in and returns the model's next turn. It blocks for the HTTP
// request, retries included. If it fails, the conversation is as it was, so
// Next may be called again with the same Input. Its errors never hold the
// API key, even one the endpoint echoed.
func (m *Model) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	turn, err := m.next(ctx, in)
	return turn, retry.Scrubbed(err, m.cfg.APIKey)
}

func (m *Model) next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	add, last, win, err := m.input(in)
	if err != nil {
		return harness.Turn{}, err
	}
	items := replaceImages(append(slices.Clip(m.items), add...), win, m.cfg.Context)
	resp, err := m.svc.New(ctx, m.params(items))
	if err != nil {
		return harness.Turn{}, apiError(ctx, err)
	}
	turn, out, calls, err := m.parse(ctx, resp)
	if err != nil {
		return harness.Turn{}, err
	}
	m.items = append(items, out...)
	m.pending = calls
	m.win = win
	if last.url != "" {
		m.last = last
	}
	return turn, nil
}

// apiError translates an error of the SDK.
func apiError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: create response: %w", context.Cause(ctx))
	}
	var re *retry.Error
	if errors.As(err, &re) {
		return fmt.Errorf("openai: create response: %w", re)
	}
	var e *responses.Error
	if errors.As(err, &e) {
		msg := e.Message
		if msg == "" {
			msg = http.StatusText(e.StatusCode)
		}
		if e.Code != "" {
			msg = e.Code + ": " + msg
		}
		return fmt.Errorf("openai: create response: status %d: %s", e.StatusCode, msg)
	}
	return fmt.Errorf("openai: create response: %v", err)
}

// params is the request for the conversation items.
func (m *Model) params(items []item) responses.ResponseNewParams {
	list := make(responses.ResponseInputParam, len(items))
	for i, it := range items {
		list[i] = it.p
	}
	p := responses.ResponseNewParams{
		Model: m.cfg.Model,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: list},
		Tools: m.tools,
		Store: param.NewOpt(m.cfg.Store),
	}
	if m.cfg.Tool == ToolPreview {
		// computer-use-preview requires truncation "auto".
		p.Truncation = responses.ResponseNewParamsTruncationAuto
	}
	if !m.cfg.Store {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if m.cfg.System != "" {
		p.Instructions = param.NewOpt(m.cfg.System)
	}
	if m.cfg.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(m.cfg.MaxTokens))
	}
	if m.cfg.ReasoningSummary != "" {
		p.Reasoning = shared.ReasoningParam{Summary: shared.ReasoningSummary(m.cfg.ReasoningSummary)}
	}
	if m.cfg.PromptCacheKey != "" {
		p.PromptCacheKey = param.NewOpt(m.cfg.PromptCacheKey)
	}
	return p
}

// replaceImages returns items with the oldest of the images still sent in
// full replaced as win and policy say (ctxpolicy.Window.Replace). items
// itself is not changed.
func replaceImages(items []item, win ctxpolicy.Window, policy ctxpolicy.Policy) []item {
	present := 0
	for _, it := range items {
		if it.omit != nil {
			present++
		}
	}
	k := win.Replace(policy, present)
	if k == 0 {
		return items
	}
	out := slices.Clone(items)
	for i := range out {
		if k == 0 {
			break
		}
		if out[i].omit != nil {
			out[i] = item{p: *out[i].omit}
			k--
		}
	}
	return out
}

// input turns in into the items to add to the conversation, and returns the
// last screenshot among them and the images the conversation holds with
// them.
func (m *Model) input(in harness.Input) ([]item, picture, ctxpolicy.Window, error) {
	win := m.win
	if len(m.items) == 0 {
		if len(in.Results) > 0 {
			return nil, picture{}, win, fmt.Errorf("openai: first input has %d results, want none", len(in.Results))
		}
		if in.Task == "" && in.Shot == nil {
			return nil, picture{}, win, fmt.Errorf("openai: first input has neither a task nor a screenshot")
		}
		add, pic, err := m.userMessage(in.Task, in.Shot)
		if in.Shot != nil {
			win.Full(in.Shot.Data)
		}
		return add, pic, win, err
	}
	if len(in.Results) != len(m.pending) {
		return nil, picture{}, win, fmt.Errorf("openai: got %d results for the %d calls of the last turn", len(in.Results), len(m.pending))
	}
	var (
		add   []item
		notes []string
		last  = m.last
	)
	for i, r := range in.Results {
		c := m.pending[i]
		if r.CallID != c.id {
			return nil, picture{}, win, fmt.Errorf("openai: result %d answers call %q, want %q", i, r.CallID, c.id)
		}
		if c.client {
			add = append(add, clientOutput(r, c))
			continue
		}
		pic := last
		var missing string
		if r.Shot != nil {
			var err error
			if pic, err = m.pictureOf(r.Shot); err != nil {
				return nil, picture{}, win, fmt.Errorf("openai: result for call %s: %w", c.id, err)
			}
		} else if pic.url == "" {
			return nil, picture{}, win, fmt.Errorf("openai: result for call %s has no screenshot, and none was sent before", c.id)
		} else {
			missing = "No new screenshot could be taken; this is the previous one."
		}
		last = pic
		text := resultText(r, c, missing)
		switch {
		case c.function && r.Zoom != nil:
			win.Image()
		case c.function && r.Shot != nil && !win.Shot(m.cfg.Context, r.Shot.Data):
			// A function_call_output can say it in words.
			add = append(add, functionText(c, append(text, ctxpolicy.Unchanged)))
			continue
		case r.Shot != nil:
			// A computer_call_output must hold an image, and the GA
			// tool reads the display size from it: it goes in full.
			win.Full(r.Shot.Data)
		default:
			win.Image() // the previous screenshot, sent again
		}
		if c.function {
			add = append(add, functionOutput(r, c, pic, text, m.cfg.ImageDetail))
			continue
		}
		out, stray := computerOutput(r, c, pic)
		for _, id := range stray {
			m.log.Warn("acknowledged safety check was not pending", logKeyCallID, c.id, "check", id)
		}
		add = append(add, out)
		for _, t := range text {
			notes = append(notes, fmt.Sprintf("computer_call %s: %s", c.id, t))
		}
	}
	// computer_call_output has no place for text: what the model should
	// read about the calls follows all the outputs as one user message.
	if len(notes) > 0 {
		add = append(add, textMessage(strings.Join(notes, "\n")))
	}
	if in.Task != "" {
		add = append(add, textMessage(in.Task))
	}
	if len(add) == 0 {
		return nil, picture{}, win, fmt.Errorf("openai: nothing to send: the last turn made no calls and the input has no task")
	}
	return add, last, win, nil
}

// pictureOf encodes a screenshot. The preview tool declares the display
// size once, and the model answers in that space: a screenshot of another
// size would make every coordinate drift, so it is an error.
func (m *Model) pictureOf(s *screen.Shot) (picture, error) {
	pic, err := pictureOf(s)
	if err == nil && m.cfg.Tool == ToolPreview && pic.size != m.cfg.Display {
		err = fmt.Errorf("screenshot %s is %dx%d, but the %s tool declares %dx%d (Config.Display)",
			s.Frame.ID, pic.size.W, pic.size.H, m.cfg.Tool, m.cfg.Display.W, m.cfg.Display.H)
	}
	return pic, err
}

// resultText is what the model should read about a result besides its
// screenshot: the error, the notes, the pointer position and the events the
// display noticed.
func resultText(r harness.Result, c pending, missing string) []string {
	var text []string
	if r.Err != nil {
		if c.actions > 1 && !errors.Is(r.Err, harness.ErrOutcomeUnknown) {
			text = append(text, fmt.Sprintf("error after %d of %d actions: %v", r.Ran, c.actions, r.Err))
		} else {
			text = append(text, fmt.Sprintf("error: %v", r.Err))
		}
	}
	text = append(text, r.Notes...)
	if r.Cursor != nil {
		text = append(text, fmt.Sprintf("the pointer is at (%g, %g)", r.Cursor.X, r.Cursor.Y))
	}
	if r.Shot != nil {
		for _, e := range r.Shot.Events {
			// harness.Executor copies the screenshot's events into
			// Notes: say each once (list_tabs' list of tabs, say).
			if !slices.Contains(r.Notes, e) {
				text = append(text, e)
			}
		}
	}
	if missing != "" {
		text = append(text, missing)
	}
	return text
}

// userMessage is the task message: its text and the first screenshot.
func (m *Model) userMessage(task string, shot *screen.Shot) ([]item, picture, error) {
	// url is the screenshot's, or empty for the placeholder.
	content := func(url string) responses.ResponseInputItemUnionParam {
		var parts responses.ResponseInputMessageContentListParam
		if task != "" {
			parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: task}})
		}
		switch {
		case url != "":
			parts = append(parts, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: param.NewOpt(url),
				Detail:   responses.ResponseInputImageDetail(m.cfg.ImageDetail),
			}})
		case shot != nil:
			parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: ctxpolicy.Placeholder}})
		}
		if shot != nil {
			for _, e := range shot.Events {
				parts = append(parts, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: e}})
			}
		}
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role:    responses.EasyInputMessageRoleUser,
			Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: parts},
		}}
	}
	if shot == nil {
		return []item{{p: content("")}}, picture{}, nil
	}
	pic, err := m.pictureOf(shot)
	if err != nil {
		return nil, picture{}, fmt.Errorf("openai: first input: %w", err)
	}
	omit := content("")
	return []item{{p: content(pic.url), omit: &omit}}, pic, nil
}

func textMessage(text string) item {
	return item{p: responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
		Role:    responses.EasyInputMessageRoleUser,
		Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(text)},
	}}}
}

// clientOutput answers a call of an application-side tool with its output,
// or its error as text: function_call_output has no error flag.
func clientOutput(r harness.Result, c pending) item {
	text := r.Output
	if r.Err != nil {
		text = "Error: " + r.Err.Error()
	}
	return item{p: responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: param.NewOpt(c.id),
		Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(text)},
	}}}
}

// computerOutput answers a computer_call with its screenshot. It
// acknowledges only the pending checks a human approved, and returns the
// ids of acknowledged checks that were not pending.
//
// The page URL goes inside the screenshot output, as output.current_url,
// which is where OpenAI's reference agent puts it for browser
// environments. PROVIDERS.md marks that placement unverified: this is the
// one place that decides it.
func computerOutput(r harness.Result, c pending, pic picture) (item, []string) {
	var acks []responses.ResponseInputItemComputerCallOutputAcknowledgedSafetyCheckParam
	for _, ch := range c.checks {
		if !slices.ContainsFunc(r.Acknowledged, func(a harness.SafetyCheck) bool { return a.ID == ch.ID }) {
			continue
		}
		ack := responses.ResponseInputItemComputerCallOutputAcknowledgedSafetyCheckParam{ID: ch.ID}
		if ch.Code != "" {
			ack.Code = param.NewOpt(ch.Code)
		}
		if ch.Message != "" {
			ack.Message = param.NewOpt(ch.Message)
		}
		acks = append(acks, ack)
	}
	var stray []string
	for _, a := range r.Acknowledged {
		if !slices.ContainsFunc(c.checks, func(ch harness.SafetyCheck) bool { return ch.ID == a.ID }) {
			stray = append(stray, a.ID)
		}
	}
	var url string
	if r.Shot != nil {
		url = r.Shot.Frame.URL
	}
	out := func(image string) responses.ResponseInputItemUnionParam {
		shot := responses.ResponseComputerToolCallOutputScreenshotParam{ImageURL: param.NewOpt(image)}
		if url != "" {
			shot.SetExtraFields(map[string]any{"current_url": url})
		}
		return responses.ResponseInputItemUnionParam{OfComputerCallOutput: &responses.ResponseInputItemComputerCallOutputParam{
			CallID:                   c.id,
			Output:                   shot,
			AcknowledgedSafetyChecks: acks,
		}}
	}
	omit := out(placeholderURL)
	return item{p: out(pic.url), omit: &omit}, stray
}

// functionOutput answers a function_call: a text saying what happened, then
// the zoomed image for zoom, or else the fresh screenshot, sent with image
// detail detail (Config.ImageDetail).
func functionOutput(r harness.Result, c pending, pic picture, text []string, detail string) item {
	if len(text) == 0 {
		text = []string{"ok"}
	}
	if r.Zoom != nil {
		if z, err := pictureOf(r.Zoom); err == nil {
			pic = z
		} else {
			text = append(text, fmt.Sprintf("the zoomed image could not be sent: %v", err))
		}
	}
	full := functionText(c, text).p
	list := &full.OfFunctionCallOutput.Output.OfResponseFunctionCallOutputItemArray
	*list = append(*list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
		ImageURL: param.NewOpt(pic.url),
		Detail:   responses.ResponseInputImageContentDetail(detail),
	}})
	omit := functionText(c, text).p
	list = &omit.OfFunctionCallOutput.Output.OfResponseFunctionCallOutputItemArray
	*list = append(*list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: ctxpolicy.Placeholder}})
	return item{p: full, omit: &omit}
}

// functionText answers a function_call with text only, as a list holding
// one input_text.
func functionText(c pending, text []string) item {
	if len(text) == 0 {
		text = []string{"ok"}
	}
	return item{p: responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: param.NewOpt(c.id),
		Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{
			OfResponseFunctionCallOutputItemArray: responses.ResponseFunctionCallOutputItemListParam{
				{OfInputText: &responses.ResponseInputTextContentParam{Text: strings.Join(text, "\n")}},
			},
		},
	}}}
}

// parse reads a response: the turn for the loop, the items to keep in the
// conversation (every output item, unchanged) and the calls to answer.
func (m *Model) parse(ctx context.Context, resp *responses.Response) (harness.Turn, []item, []pending, error) {
	var (
		turn    harness.Turn
		out     []item
		calls   []pending
		texts   []string
		refusal bool
	)
	switch resp.Status {
	case responses.ResponseStatusFailed:
		return turn, nil, nil, fmt.Errorf("openai: response %s failed: %s: %s", resp.ID, resp.Error.Code, resp.Error.Message)
	case responses.ResponseStatusCompleted, responses.ResponseStatusIncomplete, "":
	default:
		return turn, nil, nil, fmt.Errorf("openai: response %s has status %q, want completed or incomplete", resp.ID, resp.Status)
	}
	for _, o := range resp.Output {
		raw := json.RawMessage(o.RawJSON())
		// Output items go back unchanged: reasoning items in particular
		// must be passed back exactly as they came.
		out = append(out, item{p: param.Override[responses.ResponseInputItemUnionParam](raw)})
		switch o.Type {
		case "message":
			for _, c := range o.Content {
				switch c.Type {
				case "output_text":
					texts = append(texts, c.Text)
				case "refusal":
					texts = append(texts, c.Refusal)
					refusal = true
				}
			}
		case "reasoning":
			for _, s := range o.Summary {
				m.log.DebugContext(ctx, "reasoning summary", logKeyResponse, resp.ID, "text", s.Text)
			}
		case "computer_call":
			call, p := computerCall(raw, string(m.cfg.Tool))
			turn.Calls = append(turn.Calls, call)
			calls = append(calls, p)
		case "function_call":
			call, p := m.functionCall(raw)
			turn.Calls = append(turn.Calls, call)
			calls = append(calls, p)
		default:
			m.log.DebugContext(ctx, "output item kept but not used", logKeyResponse, resp.ID, "type", o.Type)
		}
	}
	turn.Text = strings.Join(texts, "\n")
	switch {
	case resp.Status == responses.ResponseStatusIncomplete && resp.IncompleteDetails.Reason == "content_filter":
		turn.Stop = harness.StopRefusal
	case resp.Status == responses.ResponseStatusIncomplete:
		turn.Stop = harness.StopMaxTokens
	case len(turn.Calls) > 0:
		turn.Stop = harness.StopToolUse
	case refusal:
		turn.Stop = harness.StopRefusal
	default:
		turn.Stop = harness.StopEndTurn
	}
	u := resp.Usage
	turn.Usage = harness.Usage{
		InputTokens:  int(u.InputTokens),
		OutputTokens: int(u.OutputTokens),
		CachedTokens: int(u.InputTokensDetails.CachedTokens),
	}
	if m.known {
		turn.Usage.CostUSD = m.price.cost(turn.Usage.InputTokens, turn.Usage.CachedTokens, turn.Usage.OutputTokens)
	}
	m.log.DebugContext(ctx, "response", logKeyResponse, resp.ID, "status", string(resp.Status),
		"stop", string(turn.Stop), "calls", len(turn.Calls), "input_tokens", turn.Usage.InputTokens,
		"cached_tokens", turn.Usage.CachedTokens, "output_tokens", turn.Usage.OutputTokens)
	return turn, out, calls, nil
}

// computerCall decodes a computer_call item of the tool named name. A GA
// call carries an actions batch; a preview call, one action. If both are
// present, actions wins.
func computerCall(raw json.RawMessage, name string) (harness.Call, pending) {
	var c struct {
		CallID  string          `json:"call_id"`
		Action  json.RawMessage `json:"action"`
		Actions json.RawMessage `json:"actions"`
		Checks  []struct {
			ID      string `json:"id"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"pending_safety_checks"`
	}
	call := harness.Call{Name: name, Space: screen.Image, Raw: raw}
	if err := json.Unmarshal(raw, &c); err != nil {
		call.DecodeErr = fmt.Errorf("%w: computer_call: %v", actions.ErrInvalid, err)
		return call, pending{}
	}
	call.ID = c.CallID
	for _, ch := range c.Checks {
		call.SafetyChecks = append(call.SafetyChecks, harness.SafetyCheck{ID: ch.ID, Code: ch.Code, Message: ch.Message})
	}
	switch {
	case present(c.Actions):
		call.Actions, call.DecodeErr = DecodeActions(c.Actions)
	case present(c.Action):
		var a actions.Action
		if a, call.DecodeErr = DecodeAction(c.Action); call.DecodeErr == nil {
			call.Actions = []actions.Action{a}
		}
	default:
		call.DecodeErr = fmt.Errorf(`%w: computer_call has neither "actions" nor "action"`, actions.ErrInvalid)
	}
	if call.ID == "" && call.DecodeErr == nil {
		call.DecodeErr = fmt.Errorf(`%w: computer_call has no "call_id"`, actions.ErrInvalid)
	}
	return call, pending{id: call.ID, actions: len(call.Actions), checks: call.SafetyChecks}
}

// functionCall decodes a function_call item: its arguments, a JSON string,
// are the fields of the extension action of the same name.
func (m *Model) functionCall(raw json.RawMessage) (harness.Call, pending) {
	var f struct {
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	call := harness.Call{Space: screen.Image, Raw: raw}
	if err := json.Unmarshal(raw, &f); err != nil {
		call.DecodeErr = fmt.Errorf("%w: function_call: %v", actions.ErrInvalid, err)
		return call, pending{function: true}
	}
	call.ID, call.Name = f.CallID, f.Name
	p := pending{id: f.CallID, function: true}
	if m.clients[f.Name] {
		// An application-side tool: its arguments go to the client as
		// they came, which must be JSON.
		p.client = true
		args := json.RawMessage(strings.TrimSpace(f.Arguments))
		switch {
		case len(args) == 0:
			call.Input = json.RawMessage("{}")
		case !json.Valid(args):
			call.Input = json.RawMessage("{}")
			call.DecodeErr = fmt.Errorf("%w: %s: the arguments are not JSON", actions.ErrInvalid, f.Name)
		default:
			call.Input = args
		}
		return call, p
	}
	if !slices.Contains(m.cfg.Functions, f.Name) {
		declared := "none"
		if names := m.functionNames(); len(names) > 0 {
			declared = strings.Join(names, ", ")
		}
		call.DecodeErr = fmt.Errorf("%w: unknown function %s (declared: %s)", actions.ErrInvalid, typeName(f.Name), declared)
		return call, p
	}
	args := f.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}" // no arguments
	}
	obj, err := object(json.RawMessage(args))
	if err != nil {
		call.DecodeErr = fmt.Errorf("%w: %s: arguments %v", actions.ErrInvalid, f.Name, err)
		return call, p
	}
	a, err := decodeTyped(f.Name, obj)
	if err != nil {
		call.DecodeErr = err
		return call, p
	}
	call.Actions = []actions.Action{a}
	p.actions = 1
	return call, p
}

// present reports whether a JSON field was given and is not null.
func present(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

// functionNames lists the declared functions: Config.Functions, then
// Config.Tools.
func (m *Model) functionNames() []string {
	names := slices.Clone(m.cfg.Functions)
	for _, t := range m.cfg.Tools {
		names = append(names, t.Name)
	}
	return names
}
