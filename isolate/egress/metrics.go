package egress

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metricDecisions counts every proxy's decisions, for a server's /metrics
// (docs/OPERATIONS.md).
var metricDecisions = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "spotter_egress_decisions_total",
	Help: "Requests the sessions' egress proxies decided on, by verdict (allowed, refused).",
}, []string{"verdict"})

var (
	metricAllowed = metricDecisions.WithLabelValues("allowed")
	metricRefused = metricDecisions.WithLabelValues("refused")
)
