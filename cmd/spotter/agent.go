package main

import (
	"context"
	"io"

	"github.com/spotter-harness/spotter/internal/agent"
)

// runAgent is the hidden "spotter agent" subcommand: the program that runs
// inside a containerd sandbox, started by isolate/containerd with the
// sandbox's sockets as flags (see internal/agent.Main). It is not for
// people, so the usage text does not list it.
func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	if err := agent.Main(ctx, args, stderr); err != nil {
		return exitError{1, err}
	}
	return nil
}
