package chat

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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/internal/browsertool"
	"github.com/spotter-harness/spotter/harness/internal/retry"
	"github.com/spotter-harness/spotter/screen"
)

// Log attribute keys.
const (
	logKeyCompletion = "completion_id"
	logKeyModel      = "model"
	logKeyDialect    = "dialect"
)

// Model talks to an OpenAI-compatible Chat Completions endpoint. It
// implements harness.Model and keeps the conversation. A Model is safe for
// concurrent use, but calls to Next are serialized: a conversation has one
// next turn.
type Model struct {
	cfg   Config
	svc   openai.ChatCompletionService
	log   *slog.Logger
	tools []openai.ChatCompletionToolUnionParam
	// clients names the application-side tools (Config.Tools).
	clients map[string]bool

	mu      sync.Mutex
	msgs    []message   // the conversation after the system message
	pending []pending   // the calls of the last turn, to be answered in order
	size    screen.Size // of the latest screenshot sent
	calls   int         // calls returned so far; UI-TARS ids are "uitars-<n>"
	// done is the end of the task that a UI-TARS batch announced with
	// finished() or call_user() after other actions: it is returned, with
	// no request, once those actions have been answered.
	done    *harness.Turn
	warned  bool             // the Display mismatch was logged
	started bool             // the first input was sent
	win     ctxpolicy.Window // the images msgs hold (Config.Context)
}

// message is one message of the conversation, kept in a form from which a
// request can leave out old screenshots.
type message struct {
	role   string     // "user", "assistant" or "tool"
	parts  []part     // user
	text   string     // assistant and tool content
	calls  []toolCall // assistant
	callID string     // tool
}

// part is a text or an image of a user message.
type part struct {
	text  string
	image string // data URL; "" for a text part
}

type toolCall struct{ id, name, args string }

// pending is a call of the last turn.
type pending struct {
	id      string
	actions int
	client  bool // a call of an application-side tool
}

// New returns a Model for cfg. It does not contact the server.
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
		Check:   checkCompletion,
		API:     "the chat completions server",
		Secrets: []string{cfg.APIKey},
		Log:     cfg.Logger.With(logKeyModel, cfg.Model),
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(&hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	m := &Model{
		cfg: cfg,
		svc: openai.NewChatCompletionService(opts...),
		log: cfg.Logger.With(logKeyModel, cfg.Model, logKeyDialect, string(cfg.Dialect)),
	}
	if cfg.Dialect == Functions {
		if m.cfg.System == "" {
			m.cfg.System = FunctionsSystem(m.functionSpace(cfg.Display), cfg.Display)
		}
		m.tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        ComputerFunction,
			Description: param.NewOpt(computerDescription(m.functionSpace(cfg.Display), cfg.Display)),
			Parameters:  shared.FunctionParameters(computerSchema()),
		})}
		if cfg.Browser {
			for _, f := range browsertool.Functions() {
				m.tools = append(m.tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
					Name: f.Name, Description: param.NewOpt(f.Description), Parameters: shared.FunctionParameters(f.Parameters)}))
			}
		}
		m.clients = map[string]bool{}
		for _, t := range cfg.Tools {
			var schema map[string]any
			if json.Unmarshal(t.InputSchema, &schema) != nil || schema == nil {
				schema = map[string]any{"type": "object"}
			}
			f := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
			if t.Description != "" {
				f.Description = param.NewOpt(t.Description)
			}
			m.tools = append(m.tools, openai.ChatCompletionFunctionTool(f))
			m.clients[t.Name] = true
		}
	}
	return m, nil
}

// checkCompletion says whether a 2xx body is a chat completion.
func checkCompletion(body []byte) error {
	var c struct {
		Choices json.RawMessage `json:"choices"`
	}
	if json.Unmarshal(body, &c) != nil || !strings.HasPrefix(strings.TrimSpace(string(c.Choices)), "[") {
		return errors.New("a chat completion")
	}
	return nil
}

// Dialect returns the dialect the Model speaks.
func (m *Model) Dialect() Dialect { return m.cfg.Dialect }

// Next sends in and returns the model's next turn. It blocks for the HTTP
// request, retries included. If it fails, the conversation is as it was,
// so Next may be called again with the same Input. Its errors never hold
// the API key, even one the server echoed.
func (m *Model) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	turn, err := m.next(ctx, in)
	return turn, retry.Scrubbed(err, m.cfg.APIKey)
}

func (m *Model) next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	win := m.win
	add, size, err := m.input(in, &win)
	if err != nil {
		return harness.Turn{}, err
	}
	msgs := replaceImages(append(slices.Clip(m.msgs), add...), win, m.cfg.Context)
	if m.done != nil && in.Task == "" {
		// The batch before finished() has been answered: the task is over.
		turn := *m.done
		m.commit(msgs, size, nil, nil, 0, win)
		return turn, nil
	}
	resp, err := m.svc.New(ctx, m.params(msgs))
	if err != nil {
		return harness.Turn{}, apiError(ctx, err)
	}
	if len(resp.Choices) == 0 {
		return harness.Turn{}, fmt.Errorf("chat: completion %s has no choices", resp.ID)
	}
	choice := resp.Choices[0]
	var (
		turn  harness.Turn
		reply message
		calls []pending
		done  *harness.Turn
	)
	if m.cfg.Dialect.IsUITARS() {
		turn, reply, calls, done = m.parseUITARS(choice, size)
	} else {
		turn, reply, calls = m.parseFunctions(choice, size)
	}
	u := resp.Usage
	turn.Usage = harness.Usage{
		InputTokens:  int(u.PromptTokens),
		OutputTokens: int(u.CompletionTokens),
		CachedTokens: int(u.PromptTokensDetails.CachedTokens),
	}
	if p := m.cfg.Price; p != nil {
		turn.Usage.CostUSD = p.cost(turn.Usage.InputTokens, turn.Usage.CachedTokens, turn.Usage.OutputTokens)
	}
	m.log.DebugContext(ctx, "completion", logKeyCompletion, resp.ID, "finish_reason", choice.FinishReason,
		"stop", string(turn.Stop), "calls", len(turn.Calls), "text_len", len(turn.Text),
		"input_tokens", turn.Usage.InputTokens, "cached_tokens", turn.Usage.CachedTokens, "output_tokens", turn.Usage.OutputTokens)
	m.commit(append(msgs, reply), size, calls, done, len(turn.Calls), win)
	return turn, nil
}

// commit makes a turn part of the conversation: msgs is the whole of it.
func (m *Model) commit(msgs []message, size screen.Size, calls []pending, done *harness.Turn, n int, win ctxpolicy.Window) {
	m.msgs, m.win = msgs, win
	m.pending = calls
	m.done = done
	m.calls += n
	m.started = true
	if !size.Empty() {
		m.size = size
	}
}

// apiError translates an error of the SDK. API keys are not part of it.
func apiError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("chat: create completion: %w", context.Cause(ctx))
	}
	var re *retry.Error
	if errors.As(err, &re) {
		return fmt.Errorf("chat: create completion: %w", re)
	}
	var e *openai.Error
	if errors.As(err, &e) {
		msg := e.Message
		if msg == "" {
			msg = http.StatusText(e.StatusCode)
		}
		if e.Code != "" {
			msg = e.Code + ": " + msg
		}
		return fmt.Errorf("chat: create completion: status %d: %s", e.StatusCode, msg)
	}
	return fmt.Errorf("chat: create completion: %v", err)
}

// input turns in into the messages to add to the conversation, and returns
// the size of the last screenshot among them (zero if none). It records
// their images in win.
func (m *Model) input(in harness.Input, win *ctxpolicy.Window) ([]message, screen.Size, error) {
	if !m.started {
		return m.first(in, win)
	}
	if len(in.Results) != len(m.pending) {
		return nil, screen.Size{}, fmt.Errorf("chat: got %d results for the %d calls of the last turn", len(in.Results), len(m.pending))
	}
	var (
		add   []message
		user  message // the screenshots, after the tool messages
		size  screen.Size
		uitar = m.cfg.Dialect.IsUITARS()
	)
	user.role = "user"
	for i, r := range in.Results {
		c := m.pending[i]
		if r.CallID != c.id {
			return nil, screen.Size{}, fmt.Errorf("chat: result %d answers call %q, want %q", i, r.CallID, c.id)
		}
		if c.client {
			add = append(add, message{role: "tool", callID: c.id, text: clientText(r)})
			continue
		}
		var pic, zoom picture
		if r.Shot != nil {
			var err error
			if pic, err = m.pictureOf(r.Shot); err != nil {
				return nil, screen.Size{}, fmt.Errorf("chat: result for call %s: %w", c.id, err)
			}
			size = pic.size
		}
		text := m.resultText(r, c, size)
		if r.Shot != nil && !win.Shot(m.cfg.Context, r.Shot.Data) {
			pic.url = ""
			text = append(text, ctxpolicy.Unchanged)
		}
		if r.Zoom != nil {
			var err error
			if zoom, err = pictureOf(r.Zoom); err != nil {
				text = append(text, fmt.Sprintf("The zoomed image could not be sent: %v", err))
			} else {
				win.Image()
			}
		}
		if r.Shot == nil {
			text = append(text, "No new screenshot could be taken.")
		}
		if uitar {
			// UI-TARS has no call ids: the screenshot and what happened.
			if pic.url != "" {
				user.parts = append(user.parts, part{image: pic.url})
			}
			if len(text) > 0 {
				user.parts = append(user.parts, part{text: strings.Join(text, "\n")})
			}
			continue
		}
		content := strings.Join(text, "\n")
		if content == "" {
			content = "ok"
		}
		if pic.url != "" || zoom.url != "" {
			content += "\nThe screenshot follows in the next user message."
		}
		add = append(add, message{role: "tool", callID: c.id, text: content})
		// Most servers accept no images in tool messages: they go in one
		// user message after all of them, each labelled with its call.
		if zoom.url != "" {
			user.parts = append(user.parts, part{text: fmt.Sprintf("Zoomed image for tool call %s:", c.id)}, part{image: zoom.url})
		}
		if pic.url != "" {
			user.parts = append(user.parts, part{text: fmt.Sprintf("Screenshot after tool call %s:", c.id)}, part{image: pic.url})
		}
	}
	if len(user.parts) > 0 {
		add = append(add, user)
	}
	if in.Task != "" {
		add = append(add, message{role: "user", parts: []part{{text: in.Task}}})
	}
	if len(add) == 0 {
		return nil, screen.Size{}, fmt.Errorf("chat: nothing to send: the last turn made no calls and the input has no task")
	}
	return add, size, nil
}

// clientText is the tool message answering a call of an application-side
// tool: its output, or its error.
func clientText(r harness.Result) string {
	if r.Err != nil {
		return "Error: " + r.Err.Error()
	}
	return r.Output
}

// first is the first input: the task and the first screenshot, recorded
// in win.
func (m *Model) first(in harness.Input, win *ctxpolicy.Window) ([]message, screen.Size, error) {
	if len(in.Results) > 0 {
		return nil, screen.Size{}, fmt.Errorf("chat: first input has %d results, want none", len(in.Results))
	}
	if in.Task == "" && in.Shot == nil {
		return nil, screen.Size{}, fmt.Errorf("chat: first input has neither a task nor a screenshot")
	}
	var (
		pic    picture
		events []part
	)
	if in.Shot != nil {
		var err error
		if pic, err = m.pictureOf(in.Shot); err != nil {
			return nil, screen.Size{}, fmt.Errorf("chat: first input: %w", err)
		}
		win.Full(in.Shot.Data)
		for _, e := range in.Shot.Events {
			events = append(events, part{text: e})
		}
	}
	if m.cfg.Dialect.IsUITARS() {
		if in.Shot == nil {
			return nil, screen.Size{}, fmt.Errorf("chat: %s needs a screenshot in the first input", m.cfg.Dialect)
		}
		// As UI-TARS deployments do: the instructions and the task, then
		// the screenshot on its own.
		return []message{
			{role: "user", parts: []part{{text: uitarsTask(m.cfg.Prompt, in.Task)}}},
			{role: "user", parts: append([]part{{image: pic.url}}, events...)},
		}, pic.size, nil
	}
	msg := message{role: "user"}
	if in.Task != "" {
		msg.parts = append(msg.parts, part{text: in.Task})
	}
	if pic.url != "" {
		msg.parts = append(msg.parts, part{image: pic.url})
	}
	msg.parts = append(msg.parts, events...)
	return []message{msg}, pic.size, nil
}

// pictureOf encodes a screenshot and checks its size against
// Config.Display: coordinates are always mapped with the screenshot's own
// size, so a mismatch is only worth a warning.
func (m *Model) pictureOf(s *screen.Shot) (picture, error) {
	pic, err := pictureOf(s)
	if err == nil && !m.cfg.Display.Empty() && pic.size != m.cfg.Display && !m.warned {
		m.warned = true
		m.log.Warn("screenshot size differs from Config.Display; coordinates follow the screenshot",
			"frame", s.Frame.ID, "size", fmt.Sprintf("%dx%d", pic.size.W, pic.size.H),
			"display", fmt.Sprintf("%dx%d", m.cfg.Display.W, m.cfg.Display.H))
	}
	return pic, err
}

// resultText is what the model should read about a result besides its
// screenshot: the error, the notes, the pointer position and the display's
// events. size is the size of the result's screenshot.
func (m *Model) resultText(r harness.Result, c pending, size screen.Size) []string {
	var text []string
	if r.Err != nil {
		if c.actions > 1 && !errors.Is(r.Err, harness.ErrOutcomeUnknown) {
			text = append(text, fmt.Sprintf("Error after %d of %d actions: %v", r.Ran, c.actions, r.Err))
		} else {
			text = append(text, fmt.Sprintf("Error: %v", r.Err))
		}
	}
	text = append(text, r.Notes...)
	if r.Cursor != nil {
		p := m.toModel(*r.Cursor, size)
		text = append(text, fmt.Sprintf("The pointer is at (%g, %g).", p.X, p.Y))
	}
	if r.Shot != nil {
		for _, e := range r.Shot.Events {
			if !slices.Contains(r.Notes, e) { // the loop may have copied them into Notes
				text = append(text, e)
			}
		}
	}
	return text
}

// toModel converts a point in the pixels of an image of size s to the
// model's coordinate space, rounded to whole units.
func (m *Model) toModel(p actions.Point, s screen.Size) actions.Point {
	if s.Empty() {
		s = m.size
	}
	sp := m.space(s)
	var w, h int
	switch sp.Kind {
	case screen.GridSpace:
		w, h = sp.Grid, sp.Grid
	case screen.ResizedSpace:
		w, h = sp.Resized.W, sp.Resized.H
	default:
		return p
	}
	if s.Empty() {
		return p
	}
	return actions.Pt(float64(int(p.X*float64(w)/float64(s.W))), float64(int(p.Y*float64(h)/float64(s.H))))
}

// space is the coordinate space of the model's actions on a screenshot of
// size s.
func (m *Model) space(s screen.Size) screen.Space {
	switch m.cfg.Dialect {
	case UITARS10:
		return screen.Grid1000
	case UITARS15:
		return screen.Space{Kind: screen.ResizedSpace, Resized: m.resized(s)}
	}
	return m.functionSpace(s)
}

// functionSpace is Config.Space, with an empty resized size filled in.
func (m *Model) functionSpace(s screen.Size) screen.Space {
	sp := m.cfg.Space
	if sp.Kind == screen.ResizedSpace && sp.Resized.Empty() {
		sp.Resized = m.resized(s)
	}
	return sp
}

// resized is the size the server resizes a screenshot of size s to.
func (m *Model) resized(s screen.Size) screen.Size {
	if !m.cfg.Resized.Empty() {
		return m.cfg.Resized
	}
	if s.Empty() {
		s = m.cfg.Display
	}
	return screen.SmartResize(s)
}

// params is the request for the conversation msgs.
func (m *Model) params(msgs []message) openai.ChatCompletionNewParams {
	list := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(m.cfg.System)}
	for _, msg := range msgs {
		switch msg.role {
		case "user":
			var parts []openai.ChatCompletionContentPartUnionParam
			for _, p := range msg.parts {
				switch {
				case p.image == "":
					parts = append(parts, openai.TextContentPart(p.text))
				default:
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.image}))
				}
			}
			if len(parts) > 0 {
				list = append(list, openai.UserMessage(parts))
			}
		case "assistant":
			a := &openai.ChatCompletionAssistantMessageParam{}
			if msg.text != "" || len(msg.calls) == 0 {
				a.Content.OfString = param.NewOpt(msg.text)
			}
			for _, c := range msg.calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.id,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.name, Arguments: c.args},
					},
				})
			}
			list = append(list, openai.ChatCompletionMessageParamUnion{OfAssistant: a})
		case "tool":
			list = append(list, openai.ToolMessage(msg.text, msg.callID))
		}
	}
	p := openai.ChatCompletionNewParams{
		Model:     shared.ChatModel(m.cfg.Model),
		Messages:  list,
		MaxTokens: param.NewOpt(int64(m.cfg.MaxTokens)),
		Tools:     m.tools,
	}
	if m.cfg.Temperature >= 0 {
		p.Temperature = param.NewOpt(m.cfg.Temperature)
	}
	return p
}

// wireMessage is the assistant message as servers send it, read from the
// raw JSON so that tool call arguments sent as an object (not the JSON
// string the API specifies) are still understood.
type wireMessage struct {
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func readMessage(c openai.ChatCompletionChoice) wireMessage {
	var w wireMessage
	if raw := c.Message.RawJSON(); raw != "" && json.Unmarshal([]byte(raw), &w) == nil {
		return w
	}
	w = wireMessage{Content: &c.Message.Content, Refusal: &c.Message.Refusal}
	for _, tc := range c.Message.ToolCalls {
		args, _ := json.Marshal(tc.Function.Arguments)
		w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: tc.ID, Type: tc.Type,
			Function: wireFunction{Name: tc.Function.Name, Arguments: args}})
	}
	return w
}

// replayArguments is what the history says a call's arguments were: as
// they came if they are a JSON object, else wrapped as
// {"invalid_arguments": "..."}. Servers parse the arguments of past calls
// to render them (vLLM rejected requests whose history held malformed
// ones, before it learned to coerce them to {}), and the model should
// still see what it wrote.
func replayArguments(args string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
		return args
	}
	b, err := json.Marshal(map[string]string{"invalid_arguments": args})
	if err != nil {
		return "{}"
	}
	return string(b)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parseUITARS reads a UI-TARS reply: one call holding the batch, or the
// end of the task.
func (m *Model) parseUITARS(c openai.ChatCompletionChoice, size screen.Size) (harness.Turn, message, []pending, *harness.Turn) {
	w := readMessage(c)
	text := deref(w.Content)
	reply := message{role: "assistant", text: addBoxTokens(text)}
	if len(w.ToolCalls) > 0 {
		m.log.Warn("UI-TARS reply has tool calls; they are ignored", "tool_calls", len(w.ToolCalls))
	}
	if size.Empty() {
		size = m.size
	}
	space := m.space(size)
	r, err := ParseUITARS(text, space)
	turn := harness.Turn{Text: r.Thought, Stop: harness.StopToolUse}
	if r.Reflection != "" {
		turn.Text = strings.TrimSpace("Reflection: " + r.Reflection + "\n" + r.Thought)
	}
	if c.FinishReason == "length" {
		turn.Stop = harness.StopMaxTokens
	}
	id := fmt.Sprintf("uitars-%d", m.calls+1)
	action := r.Action
	if action == "" {
		action = text
	}
	raw, _ := json.Marshal(action)
	call := harness.Call{ID: id, Name: "uitars", Space: space, Raw: raw}
	var done *harness.Turn
	switch {
	case err != nil:
		call.DecodeErr = err
	case r.Finished:
		end := harness.Turn{Stop: harness.StopEndTurn, Text: r.Answer}
		if r.CallUser {
			end.Text = "The model asks for a human's help: " + r.Thought
		} else if end.Text == "" {
			end.Text = r.Thought
		}
		switch {
		case len(r.Actions) == 0 && turn.Stop == harness.StopMaxTokens:
			return harness.Turn{Text: turn.Text, Stop: harness.StopMaxTokens}, reply, nil, nil
		case len(r.Actions) == 0:
			return end, reply, nil, nil
		case turn.Stop != harness.StopMaxTokens:
			done = &end // after the batch has run
		}
		call.Actions = r.Actions
	default:
		call.Actions = r.Actions
	}
	turn.Calls = []harness.Call{call}
	return turn, reply, []pending{{id: id, actions: len(call.Actions)}}, done
}

// parseFunctions reads a function-calling reply.
func (m *Model) parseFunctions(c openai.ChatCompletionChoice, size screen.Size) (harness.Turn, message, []pending) {
	w := readMessage(c)
	if size.Empty() {
		size = m.size
	}
	space := m.space(size)
	text := deref(w.Content)
	refusal := deref(w.Refusal)
	reply := message{role: "assistant", text: text}
	turn := harness.Turn{Text: text}
	if refusal != "" {
		turn.Text = strings.TrimSpace(text + "\n" + refusal)
	}
	var calls []pending
	for i, tc := range w.ToolCalls {
		id := tc.ID
		if id == "" {
			// Some servers send no ids; the reply pairs with this one.
			id = fmt.Sprintf("call_%d", m.calls+i+1)
		}
		raw, _ := json.Marshal(tc)
		call := harness.Call{ID: id, Name: tc.Function.Name, Space: space, Raw: raw}
		args, err := argumentsText(tc.Function.Arguments)
		p := pending{id: id}
		switch {
		case m.clients[tc.Function.Name]:
			p.client = true
			call.Input = json.RawMessage("{}")
			switch {
			case err != nil:
				call.DecodeErr = invalidf("%s: %v", tc.Function.Name, err)
			case strings.TrimSpace(args) == "":
			case !json.Valid([]byte(args)):
				call.DecodeErr = invalidf("%s: the arguments are not JSON", tc.Function.Name)
			default:
				call.Input = json.RawMessage(args)
			}
		case err != nil:
			call.DecodeErr = invalidf("%s: %v", tc.Function.Name, err)
		case m.cfg.Browser && slices.Contains(browsertool.Names, tc.Function.Name):
			call.Space = screen.Image // no coordinates
			var a actions.Action
			if a, call.DecodeErr = browsertool.Decode(tc.Function.Name, json.RawMessage(args)); call.DecodeErr == nil {
				call.Actions = []actions.Action{a}
			}
		case tc.Function.Name != ComputerFunction:
			call.DecodeErr = invalidf("unknown function %s (%s)", quoteClip(tc.Function.Name), m.functionNames())
		default:
			call.Actions, call.DecodeErr = DecodeArguments(args)
		}
		reply.calls = append(reply.calls, toolCall{id: id, name: tc.Function.Name, args: replayArguments(args)})
		turn.Calls = append(turn.Calls, call)
		p.actions = len(call.Actions)
		calls = append(calls, p)
	}
	switch {
	case c.FinishReason == "length":
		turn.Stop = harness.StopMaxTokens
	case c.FinishReason == "content_filter":
		turn.Stop = harness.StopRefusal
	case len(turn.Calls) > 0:
		turn.Stop = harness.StopToolUse
	case refusal != "":
		turn.Stop = harness.StopRefusal
	default:
		turn.Stop = harness.StopEndTurn
	}
	return turn, reply, calls
}

// functionNames says which functions are declared, for an error message.
func (m *Model) functionNames() string {
	if len(m.cfg.Tools) == 0 && !m.cfg.Browser {
		return "the only function is " + ComputerFunction
	}
	names := []string{ComputerFunction}
	if m.cfg.Browser {
		names = append(names, browsertool.Names...)
	}
	for _, t := range m.cfg.Tools {
		names = append(names, t.Name)
	}
	return "the functions are " + strings.Join(names, ", ")
}
