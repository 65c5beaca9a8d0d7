package store

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// What the committer counts, for a server's /metrics (docs/OPERATIONS.md).
var (
	metricCommit = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_store_commit_duration_seconds",
		Help:    "Time of one group commit (a transaction and its sync to disk), by driver (sqlite, postgres) and outcome (ok, failed).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15),
	}, []string{"driver", "outcome"})
	metricCommitWrites = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_store_commit_writes",
		Help:    "Writes that shared one group commit, by driver.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8),
	}, []string{"driver"})
)

func init() {
	for _, d := range []string{"sqlite", "postgres"} {
		metricCommit.WithLabelValues(d, "ok")
		metricCommit.WithLabelValues(d, "failed")
		metricCommitWrites.WithLabelValues(d)
	}
}

// driver names d's database for metrics.
func (d *db) driver() string {
	if d.dollar {
		return "postgres"
	}
	return "sqlite"
}
