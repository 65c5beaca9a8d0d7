package main

import (
	"context"

	"github.com/spotter-harness/spotter/internal/bench"
)

// serverBench measures the server section of `spotter bench`: the executor
// API's overhead and SSE fan-out, on the server of `spotter serve`, with
// rounds samples of each figure.
func serverBench(rounds int) func(ctx context.Context, report func(bench.Figure)) error {
	return bench.MeasureServer(bench.ServerOptions{Rounds: rounds})
}
