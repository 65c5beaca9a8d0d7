package web

import (
	"log/slog"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/web/session"
)

// defaultModel builds a session's model with the provider adapters the
// runner knows, with keys and base URLs from getenv.
func defaultModel(m session.ModelSpec, image screen.Size, tools []harness.ToolSpec, getenv func(string) string, log *slog.Logger) (harness.Model, error) {
	spec := runner.ModelSpec{Provider: m.Provider, Name: m.Name, BaseURL: m.BaseURL, MaxTokens: m.MaxTokens}
	return runner.NewModel(spec, image, tools, getenv, log)
}
