// Package perf measures the ways a display can capture a screenshot at the
// size a model wants, and checks that each one shows the page as it is after
// the last action rather than a stale frame.
//
// The package's code is small: Summary and Summarize, which are
// internal/stats's (nearest-rank percentiles), under the names the
// measurements use. The measurements are its integration tests and
// benchmarks, which drive real Chromium and chromium-headless-shell and need
// SPOTTER_INTEGRATION=1:
//
//	SPOTTER_INTEGRATION=1 go test ./internal/perf/ -v
//	SPOTTER_INTEGRATION=1 go test ./internal/perf/ -run '^$' -bench CapturePaths/step -benchtime 1x -timeout 120m -v -capture.out /tmp/step.md
//
// docs/PERFORMANCE.md ("Capture paths") has the method, the results and the
// recommended capture path.
package perf

import (
	"time"

	"github.com/spotter-harness/spotter/internal/stats"
)

// Summary describes a set of latency samples; see stats.Summary.
type Summary = stats.Summary

// Summarize returns the Summary of samples; see stats.Summarize.
func Summarize(samples []time.Duration) Summary { return stats.Summarize(samples) }
