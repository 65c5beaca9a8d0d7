package wiring

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
)

// ModelSpec names the model and how to reach it.
type ModelSpec struct {
	Provider  string `yaml:"provider"`   // script, anthropic, openai, gemini
	Name      string `yaml:"name"`       // the provider's model name; empty: the adapter's default
	BaseURL   string `yaml:"base_url"`   // overrides the provider's endpoint (and its environment variable)
	MaxTokens int    `yaml:"max_tokens"` // per reply; zero: the adapter's default
	// Cassette replays a recorded exchange with the provider through a
	// local fake endpoint, so the real adapter runs without network or key.
	// A relative path is relative to the task file.
	Cassette string `yaml:"cassette"`

	// BrowserTools offers the model the browser actions its provider's
	// computer tool lacks (list, switch and close tabs, answer a dialog,
	// upload a file), as the adapter's extra tool or functions.
	BrowserTools bool `yaml:"browser_tools"`

	// Context says which screenshots each request to the model carries
	// in full: keep (the newest; -1 for all), chunk (how many older ones
	// are replaced by a placeholder at a time) and repeats (send an
	// unchanged screenshot again). Zero values are the defaults
	// (harness/ctxpolicy).
	Context ctxpolicy.Policy `yaml:"context"`

	// Script models only.
	Turns  []script.Turn `yaml:"turns"`
	Strict *bool         `yaml:"strict"` // default true: an unexpected error result fails the run
}

// Providers lists the model providers a task may name.
var Providers = []string{"script", "anthropic", "openai", "gemini", "chat"}

// NewModel builds the model a session names, for a server that runs its
// own loop: image is the size of the screenshots the model is sent, tools
// are the application-side tools to declare next to the computer tool, and
// getenv supplies API keys and base URLs (nil: none). A script model takes
// no tools. With a cassette, the provider's adapter talks to a replay of
// the recorded exchange; whether the replay went as recorded shows only as
// model errors. The adapters of anthropic, openai, gemini and chat (and
// script) implement harness.Stateful.
func NewModel(m ModelSpec, image screen.Size, tools []harness.ToolSpec, getenv func(string) string, log *slog.Logger) (harness.Model, error) {
	if m.Provider == "script" && len(tools) > 0 {
		return nil, fmt.Errorf("%w: a script model cannot call application-side tools", ErrSpec)
	}
	model, _, err := buildModel(m, image, tools, getenv, log)
	return model, err
}

// NewTaskModel builds the model a task names. display is the size of the
// image the model is sent; getenv supplies API keys and base URLs (nil:
// none).
//
// With a cassette, the provider's real adapter talks to a replay of the
// recorded exchange instead of the network, with a placeholder key; the
// returned player says afterwards whether the replay went as recorded.
func NewTaskModel(m ModelSpec, display screen.Size, getenv func(string) string, log *slog.Logger) (harness.Model, *cassette.Player, error) {
	return buildModel(m, display, nil, getenv, log)
}

func buildModel(m ModelSpec, display screen.Size, tools []harness.ToolSpec, getenv func(string) string, log *slog.Logger) (harness.Model, *cassette.Player, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if m.Cassette == "" {
		model, err := providerModel(m, display, tools, getenv, nil, log)
		return model, nil, err
	}
	if m.Provider == "script" {
		return nil, nil, fmt.Errorf("%w: a script model cannot replay a cassette", ErrSpec)
	}
	p, err := cassette.Open(m.Cassette)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: cassette: %v", ErrSpec, err)
	}
	m.BaseURL = "" // the recorded paths are the provider's default ones
	replay := func(k string) string {
		switch k {
		case "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY":
			return "cassette-replay"
		}
		return "" // nothing from the real environment reaches a replay
	}
	model, err := providerModel(m, display, tools, replay, p.Client(), log)
	return model, p, err
}

// providerModel builds a provider's adapter, declaring tools. A nil client
// means the adapter's default HTTP client.
func providerModel(m ModelSpec, display screen.Size, tools []harness.ToolSpec, getenv func(string) string, client *http.Client, log *slog.Logger) (harness.Model, error) {
	switch m.Provider {
	case "script":
		if m.Context != (ctxpolicy.Policy{}) {
			return nil, fmt.Errorf("%w: model context: a script model is sent no screenshots", ErrSpec)
		}
		return script.New(m.Turns, m.Strict == nil || *m.Strict), nil
	case "anthropic":
		c := anthropic.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens, c.HTTPClient, c.Tools, c.Browser = m.MaxTokens, client, tools, m.BrowserTools
		c.Context = m.Context
		return anthropic.New(c)
	case "openai":
		c := openai.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens, c.HTTPClient, c.Tools, c.Context = m.MaxTokens, client, tools, m.Context
		if m.BrowserTools {
			c.Functions = append(c.Functions, openai.BrowserFunctions()...)
		}
		return openai.New(c)
	case "gemini":
		c := gemini.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens, c.HTTPClient, c.Tools, c.Browser = m.MaxTokens, client, tools, m.BrowserTools
		c.Context = m.Context
		return gemini.New(c)
	case "chat":
		// Open models on an OpenAI-compatible endpoint (vLLM, Ollama, LM Studio).
		c := chat.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = m.Name, cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens, c.HTTPClient, c.Tools, c.Browser = m.MaxTokens, client, tools, m.BrowserTools
		c.Context = m.Context
		return chat.New(c)
	}
	return nil, fmt.Errorf("%w: unknown model provider %q (want one of %v)", ErrSpec, m.Provider, Providers)
}

// ImageSize is the largest image the model's size rule allows for the
// viewport. A script's coordinates are written against the viewport itself.
func ImageSize(m ModelSpec, viewport screen.Size) screen.Size {
	if m.Provider == "script" {
		return viewport
	}
	return screen.RuleFor(m.Provider, m.Name).Fit(viewport)
}

// ExecutorProviders lists the wire formats an executor session's client
// may post its calls in.
var ExecutorProviders = []string{"anthropic", "openai", "gemini"}

// Codec reads one provider's native calls and writes its results: the
// adapters' executor functions, for the executor API.
type Codec struct {
	Decode func(raw json.RawMessage, display screen.Size) (harness.Call, error)
	Encode func(c harness.Call, r harness.Result) (json.RawMessage, error)
	// Message, when set, is the text the result item has no place for
	// (OpenAI's computer_call_output); nil otherwise.
	Message func(c harness.Call, r harness.Result) json.RawMessage
	// NeedsShot, when set, says which results Encode cannot write without
	// a screenshot (OpenAI's outputs must hold an image); nil means none.
	NeedsShot func(c harness.Call) bool
}

// CodecFor returns the codec of provider's wire format, for model (which
// picks OpenAI's image detail and Gemini's function set). An unknown
// provider's error wraps ErrSpec.
func CodecFor(provider, model string) (Codec, error) {
	switch provider {
	case "anthropic":
		return Codec{Decode: anthropic.DecodeCall, Encode: anthropic.EncodeResult}, nil
	case "openai":
		// The model's name picks the image detail of a function_call's
		// screenshot, as the adapter sends it.
		encode := func(c harness.Call, r harness.Result) (json.RawMessage, error) {
			return openai.EncodeResultFor(model, c, r)
		}
		return Codec{Decode: openai.DecodeCall, Encode: encode, Message: openai.ResultMessage, NeedsShot: openai.NeedsShot}, nil
	case "gemini":
		set := gemini.FunctionsAuto
		if model != "" {
			set = gemini.FunctionSetFor(model)
		}
		decode := func(raw json.RawMessage, _ screen.Size) (harness.Call, error) { return gemini.DecodePart(raw, set) }
		return Codec{Decode: decode, Encode: gemini.EncodeResult}, nil
	}
	return Codec{}, fmt.Errorf("%w: unknown provider %q (want one of %v)", ErrSpec, provider, ExecutorProviders)
}
