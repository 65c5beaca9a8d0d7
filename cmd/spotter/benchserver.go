package main

import "github.com/spotter-harness/spotter/internal/bench"

// serverBench measures the server section of `spotter bench`: the executor
// API's overhead and SSE fan-out, on the server of `spotter serve`.
var serverBench = bench.MeasureServer(bench.ServerOptions{})
