package approvals

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.opentelemetry.io/otel"
)

// What the queues count, for a server's /metrics (docs/OPERATIONS.md).
var (
	// metricPending is the requests waiting for a human in every queue
	// of the process, and how long the oldest has waited.
	metricPending = &pendingSet{since: map[*entry]time.Time{},
		count: prometheus.NewDesc("spotter_approvals_pending", "Approval requests waiting for a human's decision.", nil, nil),
		oldest: prometheus.NewDesc("spotter_approval_oldest_pending_seconds",
			"How long the oldest approval request still waiting has waited (0 when none waits).", nil, nil)}
	metricDecision = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_approval_decision_seconds",
		Help:    "Time from an approval request to its decision, by verdict (approve, deny, edit, expired).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"verdict"})
)

func init() {
	prometheus.MustRegister(metricPending)
	for _, v := range []string{string(Approve), string(Deny), string(Edit), verdictExpired} {
		metricDecision.WithLabelValues(v)
	}
}

// verdictExpired labels decisions nobody made in time.
const verdictExpired = "expired"

// observeDecision counts r's decision v.
func observeDecision(r Request, v Verdict) {
	label := string(v.Kind)
	if v.By == byTimeout {
		label = verdictExpired
	}
	metricDecision.WithLabelValues(label).Observe(max(v.At.Sub(r.Created), 0).Seconds())
}

// pendingSet is the pending entries of every queue, each with when it was
// asked, collected as two gauges.
type pendingSet struct {
	count, oldest *prometheus.Desc

	mu    sync.Mutex
	since map[*entry]time.Time
}

func (p *pendingSet) add(e *entry, created time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since[e] = created
}

func (p *pendingSet) remove(e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.since, e)
}

func (p *pendingSet) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.count
	ch <- p.oldest
}

func (p *pendingSet) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	n := len(p.since)
	var first time.Time
	for _, t := range p.since {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	p.mu.Unlock()
	age := 0.0
	if !first.IsZero() {
		age = max(time.Since(first).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(p.count, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(p.oldest, prometheus.GaugeValue, age)
}

// tracer makes the span of each wait for a human (SpanWait).
var tracer = otel.Tracer("github.com/spotter-harness/spotter/approvals")

// SpanWait is the name of the span of Queue.Ask's wait for a decision.
const SpanWait = "spotter.approval.wait"
