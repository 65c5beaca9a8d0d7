package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spotter-harness/spotter/internal/agent"
)

// The host's side asks the agent, over its unix socket, whether it serves.
// In a sandbox the same socket gives browsers (agent.DialBrowser).
func ExamplePing() {
	dir, _ := os.MkdirTemp("", "agent")
	defer os.RemoveAll(dir)
	a, err := agent.Listen(agent.Config{
		Socket:   filepath.Join(dir, "agent.sock"),
		Chromium: "/bin/true", // a stand-in: this example starts no browser
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	defer func() { stop(); <-done }()

	status, err := agent.Ping(ctx, filepath.Join(dir, "agent.sock"), os.Getuid())
	fmt.Println(status, err)
	// Output:
	// browsers=0 <nil>
}
