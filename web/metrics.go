package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/internal/session"
)

// What a server counts of itself and of its replica's lease, for
// /metrics (docs/OPERATIONS.md). The other families are counted where
// the work is done: harness, approvals, internal/session, internal/wiring,
// isolate/egress and store.
var (
	metricReady = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "spotter_ready",
		Help: "1 when this server's last readiness check (/readyz) passed, 0 when it failed or none was made yet.",
	})
	metricRenewals = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_replica_lease_renewals_total",
		Help: "This replica's attempts to renew its lease, by outcome (ok; failed: the store did not answer; lapsed: it had run out).",
	}, []string{"outcome"})
	metricLeaseLost = promauto.NewCounter(prometheus.CounterOpts{
		Name: "spotter_replica_leases_lost_total",
		Help: "Times this replica lost its lease and stopped every session (the others adopt them).",
	})
	metricAdoptions = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_replica_adoptions_total",
		Help: "Orphaned sessions this replica claimed, by outcome (adopted; failed: claimed but not restored).",
	}, []string{"outcome"})
	metricReplicas = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "spotter_replicas_live",
		Help: "Replicas with a live lease in the store, as this replica last read it (itself included).",
	})
	metricForwarded = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_replica_forwarded_requests_total",
		Help: "Requests this replica forwarded to the replica that owns their session, by outcome (ok; failed: the owner did not answer).",
	}, []string{"outcome"})
)

func init() {
	for _, o := range []string{"ok", "failed", "lapsed"} {
		metricRenewals.WithLabelValues(o)
	}
	for _, o := range []string{"adopted", "failed"} {
		metricAdoptions.WithLabelValues(o)
	}
	for _, o := range []string{"ok", "failed"} {
		metricForwarded.WithLabelValues(o)
	}
}

// MetricsHandler serves the process's metrics in Prometheus's formats:
// every family of docs/OPERATIONS.md, and the Go runtime's and the
// process's. spotter serve --metrics-addr serves it on a listener of its
// own, apart from the API and its credentials.
func MetricsHandler() http.Handler {
	return promhttp.HandlerFor(prometheus.DefaultGatherer, promhttp.HandlerOpts{})
}

// traced wraps h in the server span of each request (OpenTelemetry's
// net/http instrumentation): a traceparent header continues the client's
// trace. The probes are left out.
func traced(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "spotter serve",
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// observe names the request's span for its route and marks it with the
// replica and the session it concerns; once the request is answered, it
// logs it (at Info: the API's routes, not the panel's assets or the
// probes), with the session's id and the trace's.
func (s *Server) observe(c *gin.Context) {
	t0 := time.Now()
	route := c.FullPath()
	id := ""
	if strings.HasPrefix(route, "/session/") || strings.HasPrefix(route, "/executor/sessions/") {
		id = c.Param("id")
	}
	if span := trace.SpanFromContext(c.Request.Context()); route != "" && span.IsRecording() {
		span.SetName(c.Request.Method + " " + route)
		span.SetAttributes(attribute.String("http.route", route))
		if id != "" {
			span.SetAttributes(attribute.String(session.SpanSessionID, id))
		}
		if s.cluster != nil {
			span.SetAttributes(attribute.String(SpanReplica, s.cluster.id))
		}
	}
	c.Next()
	switch route {
	case "", "/healthz", "/readyz", "/login":
		return
	}
	args := []any{"method", c.Request.Method, "route", route, "status", c.Writer.Status(),
		"elapsed", time.Since(t0).Round(time.Millisecond)}
	if id != "" {
		args = append(args, "session", id)
	}
	if c.GetHeader(HeaderForwarded) != "" {
		args = append(args, "forwarded_by", c.GetHeader(HeaderForwarded))
	}
	s.log.InfoContext(c.Request.Context(), "request", args...)
}

// SpanReplica is the span attribute that names the replica that answered
// a request, or forwarded it.
const SpanReplica = "spotter.replica"
