package qa

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/screen"
)

// newModel builds the model a task names, as runner.Run does (runner keeps
// its builder unexported): a script, a provider's adapter, or the adapter
// talking to a cassette's replay. The player, if any, says afterwards
// whether the replay went as recorded.
func newModel(m runner.ModelSpec, image screen.Size, getenv func(string) string, log *slog.Logger) (harness.Model, *cassette.Player, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if m.Cassette == "" {
		model, err := providerModel(m, image, getenv, nil, log)
		return model, nil, err
	}
	if m.Provider == "script" {
		return nil, nil, fmt.Errorf("%w: a script model cannot replay a cassette", ErrTest)
	}
	p, err := cassette.Open(m.Cassette)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: cassette: %v", ErrTest, err)
	}
	m.BaseURL = ""
	replayEnv := func(k string) string {
		switch k {
		case "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY":
			return "cassette-replay"
		}
		return ""
	}
	model, err := providerModel(m, image, replayEnv, p.Client(), log)
	return model, p, err
}

func providerModel(m runner.ModelSpec, image screen.Size, getenv func(string) string, client *http.Client, log *slog.Logger) (harness.Model, error) {
	switch m.Provider {
	case "script":
		return script.New(m.Turns, m.Strict == nil || *m.Strict), nil
	case "anthropic":
		c := anthropic.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), image, log
		c.MaxTokens, c.HTTPClient = m.MaxTokens, client
		return anthropic.New(c)
	case "openai":
		c := openai.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), image, log
		c.MaxTokens, c.HTTPClient = m.MaxTokens, client
		return openai.New(c)
	case "gemini":
		c := gemini.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = cmp.Or(m.Name, c.Model), cmp.Or(m.BaseURL, c.BaseURL), image, log
		c.MaxTokens, c.HTTPClient = m.MaxTokens, client
		return gemini.New(c)
	case "chat":
		c := chat.ConfigFromEnv(getenv)
		c.Model, c.BaseURL, c.Display, c.Logger = m.Name, cmp.Or(m.BaseURL, c.BaseURL), image, log
		c.MaxTokens, c.HTTPClient = m.MaxTokens, client
		return chat.New(c)
	}
	return nil, fmt.Errorf("%w: unknown model provider %q", ErrTest, m.Provider)
}

// imageSize is the image the model is sent: the task's, or the largest its
// model's size rule allows for the viewport (a script's is the viewport).
func imageSize(t runner.Task) screen.Size {
	if t.Image.Width > 0 {
		return screen.Size{W: t.Image.Width, H: t.Image.Height}
	}
	viewport := screen.Size{W: t.Display.Width, H: t.Display.Height}
	if t.Model.Provider == "script" {
		return viewport
	}
	return screen.RuleFor(t.Model.Provider, t.Model.Name).Fit(viewport)
}
