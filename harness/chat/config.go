package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/internal/browsertool"
	"github.com/spotter-harness/spotter/screen"
)

// Dialect is how a model speaks computer use over Chat Completions.
type Dialect string

const (
	// DialectAuto guesses the dialect from the model name (see DialectFor).
	DialectAuto Dialect = ""
	// UITARS15 is UI-TARS 1.5: "Thought: ...\nAction: click(start_box=...)"
	// text, with coordinates in pixels of the smart-resized screenshot
	// (screen.ResizedSpace).
	UITARS15 Dialect = "ui-tars-1.5"
	// UITARS10 is UI-TARS 1.0: the same text, with coordinates on a 0..1000
	// grid over the screenshot (screen.Grid1000).
	UITARS10 Dialect = "ui-tars-1.0"
	// Functions is plain function calling: a "computer" function whose
	// arguments are an OpenAI-style action object, answered by tool
	// messages and a user message holding the screenshots.
	Functions Dialect = "functions"
)

// IsUITARS reports whether d is a UI-TARS text dialect.
func (d Dialect) IsUITARS() bool { return d == UITARS15 || d == UITARS10 }

// DialectFor guesses a model's dialect from its name, ignoring case.
// Names containing "ui-tars", "ui_tars" or "uitars" are UI-TARS: 1.0 if
// the name says "1.0", "-sft" or "-dpo" (the suffixes of the 1.0 releases,
// such as "UI-TARS-7B-DPO"), otherwise 1.5, the current open release
// ("ByteDance-Seed/UI-TARS-1.5-7B", and servers that call it just
// "ui-tars"). Every other name is Functions.
func DialectFor(model string) Dialect {
	m := strings.ToLower(model)
	if !strings.Contains(m, "ui-tars") && !strings.Contains(m, "ui_tars") && !strings.Contains(m, "uitars") {
		return Functions
	}
	switch {
	case strings.Contains(m, "1.5") || strings.Contains(m, "1_5") || strings.Contains(m, "1-5"):
		return UITARS15
	case strings.Contains(m, "1.0") || strings.Contains(m, "-sft") || strings.Contains(m, "-dpo"):
		return UITARS10
	}
	return UITARS15
}

// Defaults of Config.
const (
	// DefaultBaseURL is where vLLM's OpenAI-compatible server listens by
	// default. Ollama's is "http://127.0.0.1:11434/v1/", LM Studio's
	// "http://127.0.0.1:1234/v1/".
	DefaultBaseURL    = "http://127.0.0.1:8000/v1/"
	DefaultMaxTokens  = 2048
	DefaultMaxImages  = 5
	DefaultTimeout    = 5 * time.Minute
	DefaultMaxRetries = 4
	// DefaultUITARSSystem is the system message UI-TARS deployments send;
	// the instructions go in the first user message (see Config.Prompt).
	DefaultUITARSSystem = "You are a helpful assistant."
	// DefaultWait is how long UI-TARS's wait() waits, as its prompt says.
	DefaultWait = 5 * time.Second
)

// Config configures a Model. The zero value of each field is its
// documented default.
type Config struct {
	APIKey  string // sent as a bearer token if set (local servers need none); never logged
	BaseURL string // default DefaultBaseURL
	Model   string // required: the name the server knows the model by

	// Dialect picks the wire dialect; DialectAuto guesses from Model.
	Dialect Dialect

	// Display is the size of the screenshots sent. It is optional: the
	// size of each screenshot is read from its Frame (or the image), and
	// that is what coordinates are mapped with. Before the first
	// screenshot it sizes the coordinate range the Functions dialect
	// describes to the model.
	Display screen.Size
	// Resized overrides the size the server resizes screenshots to, for
	// UI-TARS 1.5 (and a Functions Space of kind ResizedSpace). Zero means
	// screen.SmartResize of the screenshot's size, which is what a server
	// with Qwen2.5-VL's default min_pixels and max_pixels does; set it if
	// the server was started with other limits.
	Resized screen.Size
	// Space is the coordinate space of a Functions model's actions:
	// screen.Image (the default) for models that answer in the sent
	// image's pixels; screen.Grid1000 for models that answer on a 0..1000
	// grid; screen.Space{Kind: screen.ResizedSpace} (with Resized left
	// empty to mean the smart-resized screenshot) for Qwen2.5-VL-style
	// models. UI-TARS dialects ignore it.
	Space screen.Space

	// System is the system message. Default: DefaultUITARSSystem for
	// UI-TARS, FunctionsSystem(...) for Functions.
	System string
	// Prompt, for UI-TARS, is the computer-use instructions sent in the
	// first user message, before the task (as UI-TARS deployments do).
	// Default: UITARSPrompt(dialect).
	Prompt string

	MaxTokens int // max_tokens; default DefaultMaxTokens
	// Temperature is the sampling temperature. 0 (the default) sends 0,
	// which is what computer use wants; negative leaves it to the server.
	Temperature float64
	// Context says which screenshots each request carries in full: the
	// newest few; older ones become a placeholder text; an unchanged
	// screenshot is not sent again, the text says so. The zero value is
	// ctxpolicy's default keep with a chunk of 1
	// (ctxpolicy.Policy.Uncached): open models are billed, if at all,
	// for every token, so each screenshot is replaced as soon as it is
	// older than the newest few. On one's own vLLM server, whose
	// automatic prefix caching saves the prefill of an unchanged prefix, a
	// chunk of 2 or 3 trades a little more context for less compute.
	Context ctxpolicy.Policy
	// MaxImages is the most images the server takes in one request
	// (vLLM: --limit-mm-per-prompt; UI-TARS deployments use 5): no request
	// carries more (Context's keep plus chunk, less one). 0 means
	// DefaultMaxImages, negative means no limit.
	MaxImages int

	HTTPClient *http.Client  // nil means a new client with default transport settings
	Timeout    time.Duration // per attempt; default DefaultTimeout
	// MaxRetries counts retries after a failed attempt (connection errors,
	// timeouts, 408, 409, 429, 5xx, a response cut off part-way, a 2xx body
	// that is not a chat completion), with exponential backoff that honours
	// Retry-After and Retry-After-Ms. 0 means DefaultMaxRetries; negative
	// means none. When they run out, Next's error says what each attempt
	// got ("the chat completions server answered 503 Service Unavailable
	// 5 times; giving up").
	MaxRetries int
	// RetryWait is the first backoff when the server names no wait; it
	// doubles with each retry (up to 30s). Default 500ms.
	RetryWait time.Duration
	Logger    *slog.Logger // nil means slog.Default()

	// Price is what the model costs, for hosted open models. Nil means
	// free (a model on one's own server): tokens are still counted.
	Price *Price

	// Tools are application-side tools, declared as function tools (name,
	// description, parameters) after the computer function; the Functions
	// dialect only. A call to one comes back as a Call with Input (the
	// arguments) and no Actions; its Result.Output, or "Error: " and
	// Result.Err, is sent back as the tool message.
	Tools []harness.ToolSpec
	// Browser declares the browser actions as functions after the
	// computer function; the Functions dialect only: list_tabs,
	// switch_tab {tab}, close_tab {tab}, dialog {accept, text} and upload
	// {files}, decoded into actions.ListTabs, SwitchTab, CloseTab, Dialog
	// and Upload. Off by default: only a browser display can run them.
	Browser bool
}

// Price is what a model costs in US dollars per million tokens.
type Price struct {
	Input, CachedInput, Output float64
}

// cost estimates the cost of a turn: cached input tokens are part of the
// input tokens and are charged at the cached price.
func (p Price) cost(input, cached, output int) float64 {
	return (float64(input-cached)*p.Input + float64(cached)*p.CachedInput + float64(output)*p.Output) / 1e6
}

// ConfigFromEnv reads the variables OpenAI-compatible clients share:
// OPENAI_API_KEY and OPENAI_BASE_URL (vLLM, Ollama and LM Studio all
// document them for their OpenAI-compatible endpoints). Only cmd/ should
// call it (with os.Getenv).
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{
		APIKey:  getenv("OPENAI_API_KEY"),
		BaseURL: getenv("OPENAI_BASE_URL"),
	}
}

// withDefaults fills in defaults and checks the fields.
func (c Config) withDefaults() (Config, error) {
	if strings.TrimSpace(c.Model) == "" {
		return c, fmt.Errorf("chat: Config.Model is required: the name the server knows the model by")
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Dialect == DialectAuto {
		c.Dialect = DialectFor(c.Model)
	}
	switch c.Dialect {
	case UITARS15, UITARS10:
		if c.System == "" {
			c.System = DefaultUITARSSystem
		}
		if c.Prompt == "" {
			c.Prompt = UITARSPrompt(c.Dialect)
		}
	case Functions:
		switch c.Space.Kind {
		case screen.ImageSpace:
		case screen.GridSpace:
			if c.Space.Grid <= 0 {
				return c, fmt.Errorf("chat: Config.Space %v: a grid needs a positive size", c.Space)
			}
		case screen.ResizedSpace:
		default:
			return c, fmt.Errorf("chat: Config.Space has unknown kind %d", c.Space.Kind)
		}
	default:
		return c, fmt.Errorf("chat: unknown dialect %q (want %q, %q or %q)", c.Dialect, UITARS15, UITARS10, Functions)
	}
	if len(c.Tools) > 0 && c.Dialect != Functions {
		return c, fmt.Errorf("chat: Config.Tools needs the %s dialect; %s has no function calls", Functions, c.Dialect)
	}
	if c.Browser && c.Dialect != Functions {
		return c, fmt.Errorf("chat: Config.Browser needs the %s dialect; %s has no function calls", Functions, c.Dialect)
	}
	seen := map[string]bool{}
	if c.Browser {
		for _, n := range browsertool.Names {
			seen[n] = true
		}
	}
	for i, t := range c.Tools {
		switch {
		case t.Name == "":
			return c, fmt.Errorf("chat: Tools[%d] has no name", i)
		case t.Name == ComputerFunction:
			return c, fmt.Errorf("chat: Tools[%d]: %q is the computer function's name", i, t.Name)
		case seen[t.Name]:
			return c, fmt.Errorf("chat: Tools[%d]: %q is declared twice (or is a browser function)", i, t.Name)
		}
		seen[t.Name] = true
		if len(bytes.TrimSpace(t.InputSchema)) > 0 {
			var s map[string]any
			if err := json.Unmarshal(t.InputSchema, &s); err != nil || s == nil {
				return c, fmt.Errorf("chat: Tools[%d] %q: input_schema is not a JSON object", i, t.Name)
			}
		}
	}
	if c.Display.W < 0 || c.Display.H < 0 || c.Resized.W < 0 || c.Resized.H < 0 {
		return c, fmt.Errorf("chat: Config.Display and Config.Resized must not be negative")
	}
	if c.MaxTokens < 0 {
		return c, fmt.Errorf("chat: Config.MaxTokens must not be negative")
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxImages == 0 {
		c.MaxImages = DefaultMaxImages
	}
	if err := c.Context.Check(); err != nil {
		return c, fmt.Errorf("chat: %w", err)
	}
	var err error
	if c.Context, err = c.Context.Uncached().Capped(c.MaxImages); err != nil {
		return c, fmt.Errorf("chat: %w (Config.MaxImages)", err)
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
	return c, nil
}
