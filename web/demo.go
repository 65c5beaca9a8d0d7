package web

import (
	"fmt"
	"log/slog"

	"github.com/spotter-harness/spotter/examples"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
)

// demoModel is the built-in demo's model (session.ProviderDemo): the real
// Anthropic adapter, answered by a replay of the demo cassette in memory,
// with a placeholder key. Nothing goes to the network, and nothing from
// the server's environment is used. A replay that does not go as recorded
// answers with an error, which ends the session's turn.
func demoModel(image screen.Size, tools []harness.ToolSpec, log *slog.Logger) (harness.Model, error) {
	if len(tools) > 0 {
		return nil, fmt.Errorf("the built-in demo takes no application-side tools")
	}
	c, err := cassette.Parse(examples.DemoCassette)
	if err != nil {
		return nil, fmt.Errorf("the built-in demo's cassette: %w", err)
	}
	p := cassette.NewPlayer(c)
	return anthropic.New(anthropic.Config{APIKey: "cassette-replay", Model: session.DemoModelName, Display: image,
		HTTPClient: p.Client(), Logger: log})
}
