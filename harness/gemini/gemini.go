package gemini

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/internal/browsertool"
	"github.com/spotter-harness/spotter/harness/internal/retry"
	"github.com/spotter-harness/spotter/screen"
)

// Defaults of Config.
const (
	DefaultBaseURL    = "https://generativelanguage.googleapis.com/"
	DefaultModel      = "gemini-3.5-flash"
	DefaultTimeout    = 2 * time.Minute
	DefaultMaxRetries = 3
)

// malformedRetries is how many more times Next asks when the model's
// function call came back malformed (finishReason MALFORMED_FUNCTION_CALL
// and no call), as the reference implementation does.
const malformedRetries = 2

// Config configures a Model. Each zero value is a documented default.
type Config struct {
	APIKey  string // required; sent in the x-goog-api-key header, never logged
	BaseURL string // default DefaultBaseURL; the SDK adds "v1beta/models/{model}:generateContent"
	Model   string // default DefaultModel
	// Display is the size of the screenshots sent. Gemini's tool takes no
	// size (its coordinates are a 1000x1000 grid over whatever image it
	// sees), so it does not reach the wire.
	Display   screen.Size
	System    string // system instruction; default none
	MaxTokens int    // maxOutputTokens, thinking included; 0 means the model's own limit
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// transport is wrapped with retries and per-attempt timeouts.
	HTTPClient *http.Client
	Timeout    time.Duration // per HTTP attempt; default DefaultTimeout, negative means none
	// MaxRetries counts retries after a failed attempt (connection errors,
	// timeouts, 408, 409, 429, 5xx, a response cut off part-way, a 2xx body
	// that is not a GenerateContentResponse), waiting as Retry-After or the
	// error's google.rpc.RetryInfo asks (up to 2 minutes; a longer wait
	// ends the retries), else with exponential backoff. Default
	// DefaultMaxRetries, negative means none. When they run out, Next's
	// error says what each attempt got ("the Gemini API answered 429 Too
	// Many Requests 4 times; giving up").
	MaxRetries int
	// RetryWait is the first backoff when the server names no wait; it
	// doubles with each retry (up to 30s). Default 500ms.
	RetryWait time.Duration
	Logger    *slog.Logger // nil means slog.Default()

	// Functions is the predefined function set; FunctionsAuto (the zero
	// value) picks it by model name with FunctionSetFor.
	Functions FunctionSet
	// Exclude lists predefined functions the model must not use; key_down
	// and key_up are always excluded. A call to an excluded function is a
	// DecodeErr.
	Exclude []string
	// Environment is the computer_use environment; default
	// genai.EnvironmentBrowser.
	Environment genai.Environment
	// SearchURL is where the legacy search function navigates; default
	// DefaultSearchURL.
	SearchURL string
	// Custom are ordinary functions declared beside computer_use. A custom
	// function named like a predefined one replaces it (the predefined one
	// is excluded).
	Custom []Function
	// Context says which screenshots each request carries in full: the
	// newest few, older ones removed from their function responses (whose
	// response then says "screenshot": ctxpolicy.Placeholder), a chunk at
	// a time so that Gemini's implicit prompt cache keeps matching; and a
	// screenshot identical to the last one sent is not sent again, its
	// response's notes say so. The zero value is ctxpolicy's default.
	Context ctxpolicy.Policy
	// Tools are application-side tools, declared as ordinary function
	// declarations (name, description, parametersJsonSchema) beside
	// computer_use. A call to one comes back as a Call with Input (the
	// args as JSON) and no Actions; its Result.Output is sent back as
	// the functionResponse's response {"output": ...}, or Result.Err as
	// {"error": ...}. Names must differ from the predefined and Custom
	// functions'.
	Tools []harness.ToolSpec
	// Browser declares the browser actions the predefined functions lack
	// as ordinary functions beside computer_use: list_tabs, switch_tab
	// {tab}, close_tab {tab}, dialog {accept, text} and upload {files},
	// decoded into actions.ListTabs, SwitchTab, CloseTab, Dialog and
	// Upload. Off by default: only a browser display can run them.
	Browser bool
}

// Function is an ordinary function the model may call besides the
// predefined computer-use ones, with the decoder of its arguments.
type Function struct {
	Declaration *genai.FunctionDeclaration
	// Decode turns the call's arguments into a batch of actions in
	// screen.Grid1000 coordinates. An error makes the call a DecodeErr;
	// its text is shown to the model.
	Decode func(args map[string]any) ([]actions.Action, error)
}

// ConfigFromEnv reads the environment variables of Google's SDKs:
// GOOGLE_API_KEY, else GEMINI_API_KEY (the SDK's precedence), and
// GOOGLE_GEMINI_BASE_URL. cmd/ calls it with os.Getenv.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:  cmp.Or(getenv("GOOGLE_API_KEY"), getenv("GEMINI_API_KEY")),
		BaseURL: getenv("GOOGLE_GEMINI_BASE_URL"),
	}
}

// Model is a harness.Model backed by Gemini computer use. It keeps the
// conversation, so it is one session's and is not safe for concurrent use.
type Model struct {
	models    *genai.Models
	apiKey    string // for scrubbing errors only
	model     string
	set       FunctionSet
	config    *genai.GenerateContentConfig
	excluded  []string
	custom    map[string]Function
	clients   map[string]bool // names of Config.Tools
	searchURL string
	context   ctxpolicy.Policy
	price     price
	log       *slog.Logger

	history []*genai.Content // everything sent and received, in order, as the next request sends it
	pending []pending        // the calls of the last turn, awaiting results
	calls   int              // calls seen, for ids the model left out
	win     ctxpolicy.Window // the images history holds (Config.Context)
}

// pending is a call the loop must answer.
type pending struct {
	id     string // Call.ID
	wireID string // the functionCall id as sent; may be empty
	name   string
	safety []harness.SafetyCheck
	client bool // a call of an application-side tool
}

// New returns a Model for cfg. It does no I/O.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("gemini: no API key (set GOOGLE_API_KEY or GEMINI_API_KEY)")
	}
	if err := cfg.Context.Check(); err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	model := cmp.Or(cfg.Model, DefaultModel)
	set := cfg.Functions
	if set == FunctionsAuto {
		set = FunctionSetFor(model)
	}
	if set != FunctionsLegacy && set != Functions35 {
		return nil, fmt.Errorf("gemini: unknown function set %v", set)
	}
	log := cmp.Or(cfg.Logger, slog.Default()).With("provider", "gemini", "model", model)

	excluded := []string{}
	for _, n := range set.Names() {
		if _, ok := unsupported[n]; ok {
			excluded = append(excluded, n)
		}
	}
	for _, n := range cfg.Exclude {
		if !slices.Contains(set.Names(), n) {
			return nil, fmt.Errorf("gemini: Exclude: %q is not one of the %s predefined functions (%s)", n, set, strings.Join(set.Names(), ", "))
		}
		excluded = append(excluded, n)
	}
	custom := map[string]Function{}
	var decls []*genai.FunctionDeclaration
	for i, f := range cfg.Custom {
		if f.Declaration == nil || f.Declaration.Name == "" || f.Decode == nil {
			return nil, fmt.Errorf("gemini: Custom[%d]: needs a named Declaration and a Decode", i)
		}
		name := f.Declaration.Name
		if _, dup := custom[name]; dup {
			return nil, fmt.Errorf("gemini: Custom[%d]: %q is declared twice", i, name)
		}
		custom[name] = f
		decls = append(decls, f.Declaration)
		if slices.Contains(set.Names(), name) {
			excluded = append(excluded, name)
		}
	}
	if cfg.Browser {
		for _, f := range browsertool.Functions() {
			if _, dup := custom[f.Name]; dup {
				return nil, fmt.Errorf("gemini: Custom: %q is a browser function (Config.Browser)", f.Name)
			}
			name := f.Name
			custom[name] = Function{
				Declaration: &genai.FunctionDeclaration{Name: name, Description: f.Description, ParametersJsonSchema: f.Parameters},
				Decode: func(args map[string]any) ([]actions.Action, error) {
					raw, err := json.Marshal(args)
					if err != nil {
						return nil, fmt.Errorf("%w: %s: the arguments are not JSON", actions.ErrInvalid, name)
					}
					a, err := browsertool.Decode(name, raw)
					if err != nil {
						return nil, err
					}
					return []actions.Action{a}, nil
				},
			}
			decls = append(decls, custom[name].Declaration)
		}
	}
	clients := map[string]bool{}
	for i, t := range cfg.Tools {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("gemini: Tools[%d] has no name", i)
		case clients[t.Name]:
			return nil, fmt.Errorf("gemini: Tools[%d]: %q is declared twice", i, t.Name)
		case slices.Contains(set.Names(), t.Name):
			return nil, fmt.Errorf("gemini: Tools[%d]: %q is a predefined %s function", i, t.Name, set)
		}
		if _, ok := custom[t.Name]; ok {
			return nil, fmt.Errorf("gemini: Tools[%d]: %q is also a Custom function", i, t.Name)
		}
		d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
				return nil, fmt.Errorf("gemini: Tools[%d] %q: input_schema is not a JSON object", i, t.Name)
			}
			d.ParametersJsonSchema = schema
		}
		clients[t.Name] = true
		decls = append(decls, d)
	}
	slices.Sort(excluded)
	excluded = slices.Compact(excluded)

	tools := []*genai.Tool{{ComputerUse: &genai.ComputerUse{
		Environment:                 cmp.Or(cfg.Environment, genai.EnvironmentBrowser),
		ExcludedPredefinedFunctions: excluded,
	}}}
	if len(decls) > 0 {
		tools = append(tools, &genai.Tool{FunctionDeclarations: decls})
	}
	gc := &genai.GenerateContentConfig{Tools: tools, MaxOutputTokens: int32(min(max(cfg.MaxTokens, 0), 1<<30))}
	if cfg.System != "" {
		gc.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: cfg.System}}}
	}

	hc := cmp.Or(cfg.HTTPClient, http.DefaultClient)
	wrapped := *hc
	base := cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport)
	rt := &retry.Transport{Base: base, Retries: DefaultMaxRetries, Wait: cfg.RetryWait, Timeout: DefaultTimeout,
		Check: checkResponse, Hint: retryInfo, API: "the Gemini API", Secrets: []string{cfg.APIKey}, Log: log}
	if cfg.MaxRetries != 0 {
		rt.Retries = max(cfg.MaxRetries, 0)
	}
	if cfg.Timeout != 0 {
		rt.Timeout = max(cfg.Timeout, 0)
	}
	wrapped.Transport = rt

	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      cfg.APIKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &wrapped,
		HTTPOptions: genai.HTTPOptions{BaseURL: cmp.Or(cfg.BaseURL, DefaultBaseURL)},
	})
	if err != nil {
		// The SDK's messages can quote the whole config, key included.
		return nil, errors.New("gemini: cannot create the SDK client")
	}
	return &Model{
		models:    client.Models,
		apiKey:    cfg.APIKey,
		model:     model,
		set:       set,
		config:    gc,
		excluded:  excluded,
		custom:    custom,
		clients:   clients,
		searchURL: cmp.Or(cfg.SearchURL, DefaultSearchURL),
		context:   cfg.Context,
		price:     priceFor(model),
		log:       log,
	}, nil
}

// FunctionSet returns the predefined function set m decodes.
func (m *Model) FunctionSet() FunctionSet { return m.set }

// Next sends in and returns the model's next turn. The first call must carry
// the task and/or the first screenshot; later ones exactly one Result per
// Call of the previous turn, in order (and may add a Task or Shot, sent
// after the function responses). If Next fails, the conversation is as it
// was, so the same Input can be sent again. Next blocks until the model
// answers, ctx is done, or the retries and timeouts run out. Its errors
// never hold the API key, even one the endpoint echoed.
func (m *Model) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	turn, err := m.next(ctx, in)
	return turn, retry.Scrubbed(err, m.apiKey)
}

func (m *Model) next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	user, win, err := m.userContent(in)
	if err != nil {
		return harness.Turn{}, err
	}
	contents := replaceImages(append(slices.Clip(m.history), user), win, m.context)
	var total harness.Usage
	for attempt := 0; ; attempt++ {
		resp, err := m.generate(ctx, contents)
		var re *retry.Error
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return harness.Turn{}, fmt.Errorf("gemini: generate content: %w", context.Cause(ctx))
		case errors.As(err, &re):
			return harness.Turn{}, fmt.Errorf("gemini: generate content: %w", re)
		default:
			return harness.Turn{}, fmt.Errorf("gemini: generate content: %v", err)
		}
		total = addUsage(total, usage(resp.UsageMetadata, m.price))
		r, err := m.parse(resp)
		if err != nil {
			return harness.Turn{Usage: total}, err
		}
		if r.malformed != "" {
			if attempt < malformedRetries {
				m.log.WarnContext(ctx, "gemini: no usable function call, asking again", "finish_reason", r.malformed, "attempt", attempt+1)
				continue
			}
			return harness.Turn{Usage: total}, fmt.Errorf("gemini: the model's function call came back %s %d times", r.malformed, attempt+1)
		}
		r.turn.Usage = total
		m.log.DebugContext(ctx, "gemini turn", "stop", string(r.turn.Stop), "calls", len(r.turn.Calls),
			"input_tokens", total.InputTokens, "cached_tokens", total.CachedTokens, "output_tokens", total.OutputTokens)
		m.history, m.win = contents, win
		if r.content != nil {
			m.history = append(m.history, r.content)
		}
		m.pending = r.pending
		m.calls += len(r.pending)
		return r.turn, nil
	}
}

// generate sends one request. The SDK converts requests and responses
// with type assertions it does not check, so content of an unexpected
// shape can make it panic; that is an error here, as any other bad
// response is.
func (m *Model) generate(ctx context.Context, contents []*genai.Content) (resp *genai.GenerateContentResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("the Gemini SDK failed on the request or its response: %v", p)
		}
	}()
	return m.models.GenerateContent(ctx, m.model, contents, m.config)
}

// userContent builds the user content for in: the function responses to
// the pending calls, then any task text and screenshot. It returns the
// images the conversation holds with it.
func (m *Model) userContent(in harness.Input) (*genai.Content, ctxpolicy.Window, error) {
	win := m.win
	if len(in.Results) != len(m.pending) {
		return nil, win, fmt.Errorf("gemini: %d results for the %d calls of the last turn", len(in.Results), len(m.pending))
	}
	var parts []*genai.Part
	for i, r := range in.Results {
		p := m.pending[i]
		if r.CallID != p.id {
			return nil, win, fmt.Errorf("gemini: result %d answers call %q, want %q", i, r.CallID, p.id)
		}
		parts = append(parts, &genai.Part{FunctionResponse: seen(functionResponse(p, r), p, r, m.context, &win)})
	}
	if in.Task != "" {
		parts = append(parts, &genai.Part{Text: in.Task})
	}
	switch {
	case in.Shot != nil && !win.Shot(m.context, in.Shot.Data):
		parts = append(parts, &genai.Part{Text: ctxpolicy.Unchanged})
	case in.Shot != nil:
		parts = append(parts, &genai.Part{InlineData: &genai.Blob{MIMEType: in.Shot.Frame.Format.MIME(), Data: in.Shot.Data}})
	}
	if len(parts) == 0 {
		return nil, win, errors.New("gemini: nothing to send: no task, screenshot or results")
	}
	return &genai.Content{Role: genai.RoleUser, Parts: parts}, win, nil
}

// functionResponse answers the call p with r: the page URL, the error and
// notes if any, the safety acknowledgement if a human gave it, the cursor
// position in grid units if known, and the screenshot (then any zoom image)
// as inline parts.
func functionResponse(p pending, r harness.Result) *genai.FunctionResponse {
	if p.client {
		// An application-side tool: its output, or its error, as the
		// Gemini documentation's "output" and "error" keys.
		resp := map[string]any{"output": r.Output}
		if r.Err != nil {
			resp = map[string]any{"error": r.Err.Error()}
		}
		return &genai.FunctionResponse{ID: p.wireID, Name: p.name, Response: resp}
	}
	resp := map[string]any{}
	var parts []*genai.FunctionResponsePart
	var notes []any
	for _, n := range r.Notes {
		notes = append(notes, n)
	}
	if r.Shot != nil {
		resp["url"] = r.Shot.Frame.URL
		parts = append(parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{
			MIMEType: r.Shot.Frame.Format.MIME(),
			Data:     r.Shot.Data,
		}})
		for _, e := range r.Shot.Events {
			// harness.Executor copies the screenshot's events into
			// Notes: say each once (list_tabs' list of tabs, say).
			if !slices.Contains(r.Notes, e) {
				notes = append(notes, e)
			}
		}
	}
	if r.Zoom != nil {
		// Only a Config.Custom function can ask for one; the crop follows
		// the screenshot.
		parts = append(parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{
			MIMEType: r.Zoom.Frame.Format.MIME(),
			Data:     r.Zoom.Data,
		}})
	}
	if r.Cursor != nil && r.Shot != nil && !r.Shot.Frame.Sent.Empty() {
		// The model thinks in grid units, not in the image's pixels.
		sent := r.Shot.Frame.Sent
		resp["cursor"] = map[string]any{
			"x": math.Round(r.Cursor.X * 1000 / float64(sent.W)),
			"y": math.Round(r.Cursor.Y * 1000 / float64(sent.H)),
		}
	}
	if r.Err != nil {
		resp["error"] = r.Err.Error()
	}
	if len(notes) > 0 {
		resp["notes"] = notes
	}
	if acknowledged(p.safety, r.Acknowledged) {
		resp["safety_acknowledgement"] = "true"
	}
	if len(resp) == 0 {
		resp["output"] = "done"
	}
	return &genai.FunctionResponse{ID: p.wireID, Name: p.name, Response: resp, Parts: parts}
}

// acknowledged reports whether every check was acknowledged.
func acknowledged(checks, acks []harness.SafetyCheck) bool {
	if len(checks) == 0 {
		return false
	}
	for _, c := range checks {
		if !slices.ContainsFunc(acks, func(a harness.SafetyCheck) bool { return a.ID == c.ID }) {
			return false
		}
	}
	return true
}

// parsed is one response, decoded.
type parsed struct {
	turn      harness.Turn
	content   *genai.Content // the model's content to keep, or nil
	pending   []pending
	malformed string // set when the response should be asked for again
}

func (m *Model) parse(resp *genai.GenerateContentResponse) (parsed, error) {
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			text := "the prompt was blocked: " + string(pf.BlockReason)
			if pf.BlockReasonMessage != "" {
				text += ": " + pf.BlockReasonMessage
			}
			return parsed{turn: harness.Turn{Text: text, Stop: harness.StopRefusal}}, nil
		}
		return parsed{}, errors.New("gemini: the response has no candidates")
	}
	c := resp.Candidates[0]
	var r parsed
	var texts []string
	// Null parts are dropped: the history is sent back, and the SDK's
	// request encoder cannot take them.
	if c.Content != nil && slices.ContainsFunc(c.Content.Parts, func(p *genai.Part) bool { return p != nil }) {
		content := *c.Content
		content.Parts = slices.DeleteFunc(slices.Clone(content.Parts), func(p *genai.Part) bool { return p == nil })
		r.content = &content
		if r.content.Role == "" {
			r.content.Role = genai.RoleModel
		}
		for _, p := range c.Content.Parts {
			switch {
			case p == nil:
			case p.FunctionCall != nil:
				call, pd := decodePart(p, m.calls+len(r.pending), m.decoder())
				r.turn.Calls = append(r.turn.Calls, call)
				r.pending = append(r.pending, pd)
			case p.Text != "" && !p.Thought:
				texts = append(texts, p.Text)
			}
		}
	}
	r.turn.Text = strings.Join(texts, "\n")
	hasCalls := len(r.turn.Calls) > 0
	switch c.FinishReason {
	case genai.FinishReasonMaxTokens:
		r.turn.Stop = harness.StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonLanguage,
		genai.FinishReasonBlocklist, genai.FinishReasonProhibitedContent, genai.FinishReasonSPII,
		genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		r.turn.Stop = harness.StopRefusal
		// The Gemini API's finishMessage does not survive the SDK, so say
		// at least why the model stopped.
		why := "the model stopped: " + string(c.FinishReason)
		if c.FinishMessage != "" {
			why += ": " + c.FinishMessage
		}
		r.turn.Text = strings.TrimSpace(r.turn.Text + "\n" + why)
	case genai.FinishReasonMalformedFunctionCall, genai.FinishReasonUnexpectedToolCall:
		if !hasCalls && r.turn.Text == "" {
			return parsed{malformed: string(c.FinishReason)}, nil
		}
		fallthrough
	default:
		r.turn.Stop = harness.StopEndTurn
		if hasCalls {
			r.turn.Stop = harness.StopToolUse
		}
	}
	return r, nil
}

// decoder is what decodes m's function calls.
type decoder struct {
	set       FunctionSet
	excluded  []string
	custom    map[string]Function
	clients   map[string]bool
	searchURL string
}

func (m *Model) decoder() decoder {
	return decoder{set: m.set, excluded: m.excluded, custom: m.custom, clients: m.clients, searchURL: m.searchURL}
}

// decodePart decodes one functionCall part; n counts the calls before it,
// for an id when the model gave none.
func decodePart(p *genai.Part, n int, d decoder) (harness.Call, pending) {
	fc := p.FunctionCall
	id := fc.ID
	if id == "" {
		id = fmt.Sprintf("gemini-call-%d", n+1)
	}
	call := harness.Call{ID: id, Name: fc.Name, Space: screen.Grid1000}
	if raw, err := json.Marshal(p); err == nil {
		call.Raw = raw
	}
	pd := pending{id: id, wireID: fc.ID, name: fc.Name}
	if d.clients[fc.Name] {
		pd.client = true
		call.Input = json.RawMessage("{}")
		if len(fc.Args) > 0 {
			// Args came from JSON, so they marshal back.
			if in, err := json.Marshal(fc.Args); err == nil {
				call.Input = in
			}
		}
		return call, pd
	}
	checks, err := safetyChecks(id, fc.Args)
	call.SafetyChecks, pd.safety = checks, checks
	var acts []actions.Action
	switch f, ok := d.custom[fc.Name]; {
	case err != nil:
	case ok:
		acts, err = f.Decode(fc.Args)
		if err == nil && len(acts) == 0 {
			err = fmt.Errorf("%w: %s decoded to no actions", actions.ErrInvalid, fc.Name)
		}
	case slices.Contains(d.excluded, fc.Name) && !isUnsupported(fc.Name):
		err = fmt.Errorf("%w: %s is excluded in this session", actions.ErrInvalid, fc.Name)
	default:
		acts, err = decodeCall(d.set, fc.Name, fc.Args, d.searchURL)
	}
	if err != nil {
		call.DecodeErr = err
	} else {
		call.Actions = acts
	}
	return call, pd
}

func isUnsupported(name string) bool { _, ok := unsupported[name]; return ok }

// safetyChecks reads args.safety_decision. Decisions "allowed" and
// "regular" need nothing; "require_confirmation" and any other value need a
// human, so an unknown decision fails safe. The check's ID is the call's.
func safetyChecks(id string, args map[string]any) ([]harness.SafetyCheck, error) {
	v, ok := args["safety_decision"]
	if !ok || v == nil {
		return nil, nil
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: safety_decision is %s, want an object", actions.ErrInvalid, typeName(v))
	}
	decision, _ := d["decision"].(string)
	explanation, _ := d["explanation"].(string)
	switch strings.ToLower(decision) {
	case "allowed", "regular":
		return nil, nil
	}
	return []harness.SafetyCheck{{ID: id, Code: cmp.Or(decision, "require_confirmation"), Message: explanation}}, nil
}
