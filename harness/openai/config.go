package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/internal/browsertool"
	"github.com/spotter-harness/spotter/screen"
)

// Tool selects the computer tool's wire version.
type Tool string

const (
	// ToolAuto picks by model name: ToolPreview for models named
	// "computer-use-preview...", ToolGA for every other model.
	ToolAuto Tool = ""
	// ToolPreview is {"type":"computer_use_preview", display_width,
	// display_height, environment}; each computer_call carries one action.
	ToolPreview Tool = "computer_use_preview"
	// ToolGA is {"type":"computer"}; each computer_call carries a batch of
	// actions, and the display size is taken from the screenshots.
	ToolGA Tool = "computer"
)

// Defaults of Config.
const (
	DefaultModel       = "gpt-5.4"
	DefaultEnvironment = "browser"
	DefaultBaseURL     = "https://api.openai.com/v1/"
	DefaultTimeout     = 5 * time.Minute
	DefaultMaxRetries  = 4
)

// Config configures a Model. The zero value of each field is its documented
// default.
type Config struct {
	APIKey  string // sent as a bearer token; never logged
	BaseURL string // default DefaultBaseURL; tests point it at a fake server
	Model   string // default DefaultModel

	// Organization and Project, if set, are sent as the OpenAI-Organization
	// and OpenAI-Project headers.
	Organization, Project string

	// Tool picks the computer tool version; ToolAuto picks by Model.
	Tool Tool
	// Display is the size of the images actually sent. The preview tool
	// declares it as display_width and display_height and needs it; the GA
	// tool takes the size from each screenshot.
	Display screen.Size
	// Environment is the preview tool's environment: "browser" (default),
	// "mac", "windows", "ubuntu" or "linux".
	Environment string

	System    string // sent as instructions on every request; empty means none
	MaxTokens int    // max_output_tokens; 0 means the API's default

	// Functions names Spotter extension actions to declare as ordinary
	// function tools, for the kinds OpenAI's computer tool lacks: any of
	// "navigate", "go_back", "go_forward", "triple_click", "mouse_down",
	// "mouse_up", "hold_key", "zoom", "cursor_position", and the browser
	// actions "list_tabs", "switch_tab", "close_tab", "dialog" and
	// "upload" (BrowserFunctions; only a browser display runs them). Their
	// arguments are the fields DecodeAction documents for the type of the
	// same name. None are declared by default.
	Functions []string

	// Tools are application-side tools, declared as function tools (name,
	// description, parameters) after the computer tool. A call to one
	// comes back as a Call with Input (the arguments) and no Actions; its
	// Result.Output, or "Error: " and Result.Err, is sent back as the
	// function_call_output. Names must differ from Functions'.
	Tools []harness.ToolSpec

	// ReasoningSummary asks for reasoning summaries: "auto", "concise" or
	// "detailed". Empty means none are asked for. Summaries are logged at
	// debug level, never shown as the model's text.
	ReasoningSummary string
	// ImageDetail is the detail of the first screenshot, sent in the task
	// message: default "original" for ToolGA (the image is not resized, so
	// coordinates stay in the sent image's pixels) and "auto" for
	// ToolPreview. Screenshots in computer_call_output carry no detail.
	ImageDetail string
	// Context says which screenshots each request carries in full: the
	// newest few, older ones replaced (in chunks, so that the prompt
	// cache keeps matching) by a 16x10 placeholder image in a
	// computer_call_output, whose wire shape needs an image, and by words
	// elsewhere. An unchanged screenshot is sent again only in a
	// computer_call_output (the GA tool reads the display size from its
	// image); a function_call_output says in words that the screen did
	// not change. The zero value is ctxpolicy's default.
	Context ctxpolicy.Policy
	// Store sets store=true so OpenAI keeps the responses. By default
	// (false) nothing is stored and reasoning items travel with
	// include=["reasoning.encrypted_content"], which is what zero data
	// retention organizations need.
	Store bool
	// PromptCacheKey, if set, is sent as prompt_cache_key to route requests
	// of one session to the same cache.
	PromptCacheKey string

	HTTPClient *http.Client  // nil means a new client with default transport settings
	Timeout    time.Duration // per attempt; default DefaultTimeout
	// MaxRetries counts retries after a failed attempt (connection errors,
	// timeouts, 408, 409, 429, 5xx, a response cut off part-way, a 2xx body
	// that is not a Responses API response), with exponential backoff that
	// honours Retry-After and Retry-After-Ms. 0 means DefaultMaxRetries;
	// negative means none. When they run out, Next's error says what each
	// attempt got ("the OpenAI API answered 429 Too Many Requests 5 times;
	// giving up").
	MaxRetries int
	// RetryWait is the first backoff when the server names no wait; it
	// doubles with each retry (up to 30s). Default 500ms.
	RetryWait time.Duration
	Logger    *slog.Logger // nil means slog.Default()

	// Price, if set, replaces the built-in price table for cost estimates.
	Price *Price
}

// ConfigFromEnv reads the OpenAI SDK's environment variables:
// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID and OPENAI_PROJECT_ID.
// Only cmd/ should call it (with os.Getenv).
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:       getenv("OPENAI_API_KEY"),
		BaseURL:      getenv("OPENAI_BASE_URL"),
		Organization: getenv("OPENAI_ORG_ID"),
		Project:      getenv("OPENAI_PROJECT_ID"),
	}
}

// withDefaults fills in defaults and checks the fields.
func (c Config) withDefaults() (Config, error) {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	// No key for OpenAI's own endpoint fails now, after the other
	// checks, not after the retries of a request that cannot pass.
	noKey := c.APIKey == "" && c.BaseURL == ""
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Tool == ToolAuto {
		c.Tool = toolFor(c.Model)
	}
	switch c.Tool {
	case ToolPreview:
		if c.Display.Empty() {
			return c, fmt.Errorf("openai: model %s uses the %s tool, which needs Config.Display", c.Model, c.Tool)
		}
	case ToolGA:
	default:
		return c, fmt.Errorf("openai: unknown tool %q (want %q or %q)", c.Tool, ToolPreview, ToolGA)
	}
	if c.Environment == "" {
		c.Environment = DefaultEnvironment
	}
	if !slices.Contains([]string{"browser", "mac", "windows", "ubuntu", "linux"}, c.Environment) {
		return c, fmt.Errorf("openai: unknown environment %q (want browser, mac, windows, ubuntu or linux)", c.Environment)
	}
	if c.ImageDetail == "" {
		c.ImageDetail = imageDetailFor(c.Tool)
	}
	if !slices.Contains([]string{"low", "high", "auto", "original"}, c.ImageDetail) {
		return c, fmt.Errorf("openai: unknown image detail %q (want low, high, auto or original)", c.ImageDetail)
	}
	if c.ReasoningSummary != "" && !slices.Contains([]string{"auto", "concise", "detailed"}, c.ReasoningSummary) {
		return c, fmt.Errorf("openai: unknown reasoning summary %q (want auto, concise or detailed)", c.ReasoningSummary)
	}
	for _, f := range c.Functions {
		if _, ok := functionSchemas[f]; !ok {
			return c, fmt.Errorf("openai: unknown function %q (want one of %s)", f, strings.Join(slices.Sorted(maps.Keys(functionSchemas)), ", "))
		}
	}
	seen := map[string]bool{}
	for i, t := range c.Tools {
		switch {
		case t.Name == "":
			return c, fmt.Errorf("openai: Tools[%d] has no name", i)
		case seen[t.Name]:
			return c, fmt.Errorf("openai: Tools[%d]: %q is declared twice", i, t.Name)
		case slices.Contains(c.Functions, t.Name):
			return c, fmt.Errorf("openai: Tools[%d]: %q is also one of Functions", i, t.Name)
		}
		seen[t.Name] = true
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			var s map[string]any
			if err := json.Unmarshal(t.InputSchema, &s); err != nil || s == nil {
				return c, fmt.Errorf("openai: Tools[%d] %q: input_schema is not a JSON object", i, t.Name)
			}
		}
	}
	if c.MaxTokens < 0 {
		return c, fmt.Errorf("openai: MaxTokens must not be negative")
	}
	if err := c.Context.Check(); err != nil {
		return c, fmt.Errorf("openai: %w", err)
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if noKey {
		return c, errors.New("openai: no API key (set OPENAI_API_KEY)")
	}
	return c, nil
}

// BrowserFunctions returns the browser actions that Config.Functions may
// declare: list, switch and close tabs, answer a JavaScript dialog, answer
// a file chooser.
func BrowserFunctions() []string { return slices.Clone(browsertool.Names) }

// imageDetailFor is Config.ImageDetail's default for tool t.
func imageDetailFor(t Tool) string {
	if t == ToolPreview {
		return "auto"
	}
	return "original"
}

// toolFor picks the tool version for a model name.
func toolFor(model string) Tool {
	if strings.HasPrefix(model, "computer-use-preview") {
		return ToolPreview
	}
	return ToolGA
}

// Price is what a model costs in US dollars per million tokens.
type Price struct {
	Input, CachedInput, Output float64
}

// prices are ESTIMATES from OpenAI's public price list, for the cost shown
// per turn; they are not billing data. Keys are model name prefixes; the
// longest match wins.
var prices = map[string]Price{
	"computer-use-preview": {Input: 3, CachedInput: 3, Output: 12},
	"gpt-5.4":              {Input: 2.5, CachedInput: 0.25, Output: 15},
	"gpt-5.4-mini":         {Input: 0.75, CachedInput: 0.075, Output: 4.5},
}

// priceFor returns the price of model and whether it is known.
func priceFor(model string) (Price, bool) {
	best, found := "", false
	for prefix := range prices {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best, found = prefix, true
		}
	}
	return prices[best], found
}

// cost estimates the cost of a turn: cached input tokens are part of the
// input tokens and are charged at the cached price.
func (p Price) cost(input, cached, output int) float64 {
	return (float64(input-cached)*p.Input + float64(cached)*p.CachedInput + float64(output)*p.Output) / 1e6
}
