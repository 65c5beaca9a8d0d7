package isolatetest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spotter-harness/spotter/internal/agent"
)

// AgentMain makes a test binary the containerd sandboxes' agent, as tests
// configure it (containerd.Config{Agent: os.Args[0], AgentArgs:
// []string{"agent"}}): started as "agent ...", it serves the sandbox until
// SIGTERM or SIGINT and exits; started otherwise, it returns at once. Call
// it first in TestMain.
func AgentMain() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := agent.Main(ctx, os.Args[2:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
