package wiring

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/local"
)

// What the displays count, for a server's /metrics (docs/OPERATIONS.md).
var (
	metricSandboxStarts = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_sandbox_starts_total",
		Help: "Sandboxes started for displays, by backend (containerd; local: a host browser's egress proxy) and outcome (ok, failed).",
	}, []string{"backend", "outcome"})
	metricSandboxStart = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_sandbox_start_duration_seconds",
		Help:    "Time to start a sandbox, by backend.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"backend"})
	metricCrashes = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_display_crashes_total",
		Help: "Displays found dead (a browser, its sandbox, a desktop), by what died (browser, sandbox, desktop, vnc).",
	}, []string{"display"})
	metricRelaunches = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_display_relaunches_total",
		Help: "Dead displays started anew, by outcome (ok; failed: the new one did not start; refused: past the restart limit).",
	}, []string{"outcome"})
)

func init() {
	for _, b := range []isolate.Backend{isolate.Containerd, isolate.Local} {
		metricSandboxStarts.WithLabelValues(string(b), "ok")
		metricSandboxStarts.WithLabelValues(string(b), "failed")
	}
	for _, d := range []string{"browser", "sandbox", Desktop, VNC} {
		metricCrashes.WithLabelValues(d)
	}
	for _, o := range []string{RelaunchOK, RelaunchFailed, RelaunchRefused} {
		metricRelaunches.WithLabelValues(o)
	}
}

// The outcomes of a dead display's relaunch.
const (
	RelaunchOK      = "ok"
	RelaunchFailed  = "failed"  // the new one did not start
	RelaunchRefused = "refused" // past the restart limit
)

// Relaunched counts a relaunch of a dead display by its owner, for a
// display opened with MaxRestarts below 0 (a session's guard relaunches
// it at its last page): outcome is one of RelaunchOK, RelaunchFailed,
// RelaunchRefused. The display counts its own restarts itself.
func Relaunched(outcome string) { metricRelaunches.WithLabelValues(outcome).Inc() }

// observeStart counts a sandbox start of backend that began at t0.
func observeStart(backend isolate.Backend, t0 time.Time, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	metricSandboxStarts.WithLabelValues(string(backend), outcome).Inc()
	metricSandboxStart.WithLabelValues(string(backend)).Observe(time.Since(t0).Seconds())
}

// startLocal starts a local sandbox (a host browser's egress proxy) and
// counts it.
func startLocal(ctx context.Context, cfg isolate.Config) (*local.Sandbox, error) {
	t0 := time.Now()
	sb, err := local.Start(ctx, cfg)
	observeStart(isolate.Local, t0, err)
	return sb, err
}
