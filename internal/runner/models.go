package runner

import (
	"cmp"
	"fmt"
	"log/slog"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
)

// Providers lists the model providers a task may name.
var Providers = []string{"script", "anthropic", "openai", "gemini"}

// newModel builds the model a task names. display is the size of the image
// the model is sent; getenv supplies API keys and base URLs (nil: none).
func newModel(m ModelSpec, display screen.Size, getenv func(string) string, log *slog.Logger) (harness.Model, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	switch m.Provider {
	case "script":
		return script.New(m.Turns, m.Strict == nil || *m.Strict), nil
	case "anthropic":
		c := anthropic.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens = m.MaxTokens
		return anthropic.New(c)
	case "openai":
		c := openai.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens = m.MaxTokens
		return openai.New(c)
	case "gemini":
		c := gemini.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), display, log
		c.MaxTokens = m.MaxTokens
		return gemini.New(c)
	}
	return nil, fmt.Errorf("%w: unknown model provider %q (want one of %v)", ErrTask, m.Provider, Providers)
}
