package session

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/spotter-harness/spotter/store"
)

// What the Managers count, for a server's /metrics (docs/OPERATIONS.md):
// the sessions this process holds, by kind and state, and the executor
// calls they hold queued, read from the live Managers at each scrape.
var (
	metricSessions = &managers{held: map[*Manager]struct{}{},
		sessions: prometheus.NewDesc("spotter_sessions",
			"Sessions this server runs (held in memory), by kind (agent, executor, mcp) and state (running, waiting, idle, failed, stopped).",
			[]string{"kind", "state"}, nil),
		queued: prometheus.NewDesc("spotter_executor_queued_calls",
			"Executor calls posted and not yet taken by their session's loop, over every session of this server.", nil, nil)}
	metricCreated = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_sessions_created_total",
		Help: "Sessions created on this server, by kind.",
	}, []string{"kind"})
)

func init() {
	prometheus.MustRegister(metricSessions)
	for _, k := range []string{KindAgent, KindExecutor, KindMCP} {
		metricCreated.WithLabelValues(k)
	}
}

var (
	sessionKinds  = []string{KindAgent, KindExecutor, KindMCP}
	sessionStates = []string{store.StatusRunning, store.StatusWaiting, store.StatusIdle, store.StatusFailed, store.StatusStopped}
)

// managers is the live Managers of the process, collected at each scrape.
type managers struct {
	sessions, queued *prometheus.Desc

	mu   sync.Mutex
	held map[*Manager]struct{}
}

func (c *managers) add(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[m] = struct{}{}
}

func (c *managers) remove(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, m)
}

func (c *managers) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.queued
}

func (c *managers) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ms := make([]*Manager, 0, len(c.held))
	for m := range c.held {
		ms = append(ms, m)
	}
	c.mu.Unlock()
	counts := map[[2]string]int{}
	queued := 0
	for _, m := range ms {
		for _, s := range m.held() {
			s.mu.Lock()
			counts[[2]string{s.kind, s.rec.Status}]++
			ex := s.exec
			s.mu.Unlock()
			if ex != nil {
				queued += len(ex.calls)
			}
		}
	}
	for _, k := range sessionKinds {
		for _, st := range sessionStates {
			ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(counts[[2]string{k, st}]), k, st)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(queued))
}
