package harness

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/actions"
)

// What the loop and the Executor count, for a server's /metrics
// (docs/OPERATIONS.md). Labels are bounded: action kinds, outcomes, and
// provider and model names (at most maxModels of them; more are "other").
var (
	metricStep = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "spotter_step_duration_seconds",
		Help:    "Time of one step of a run (a model turn and the answers to its calls), from the model's request, or from an executor call's arrival, to the last answer.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 13),
	})
	metricAction = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_action_duration_seconds",
		Help:    "Time of one action, from its checks to its performing (an approval's wait included), by action kind and outcome (ok, error, denied).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"kind", "outcome"})
	metricCapture = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "spotter_capture_duration_seconds",
		Help:    "Time of one screenshot, the display's settle wait included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	metricSettle = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_settle_duration_seconds",
		Help:    "How long a display waited to go quiet before a screenshot, as the display measured it, by outcome (settled, timed_out).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"outcome"})
	metricModelRequest = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spotter_model_request_duration_seconds",
		Help:    "Time of one request for a model's turn, retries included, by provider, model and outcome (ok, error).",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 11),
	}, []string{"provider", "model", "outcome"})
	metricTokens = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_model_tokens_total",
		Help: "Tokens the providers reported, by provider, model and type (input, output, cached; cached tokens are part of input).",
	}, []string{"provider", "model", "type"})
	metricCost = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "spotter_model_cost_dollars_total",
		Help: "Estimated cost of the models' turns in US dollars, from each adapter's price table, by provider and model.",
	}, []string{"provider", "model"})
)

// Action outcomes, for metricAction.
const (
	outcomeOK     = "ok"
	outcomeError  = "error"
	outcomeDenied = "denied"
)

func init() {
	for _, k := range actions.Kinds() {
		for _, o := range []string{outcomeOK, outcomeError, outcomeDenied} {
			metricAction.WithLabelValues(k.String(), o)
		}
	}
	metricSettle.WithLabelValues("settled")
	metricSettle.WithLabelValues("timed_out")
}

// maxModels bounds the model names used as label values: a client may
// name any model, and each name would be a new series.
const maxModels = 64

var models = struct {
	sync.Mutex
	seen map[string]bool
}{seen: map[string]bool{}}

// modelLabel returns name, or "other" once maxModels names were seen.
func modelLabel(name string) string {
	models.Lock()
	defer models.Unlock()
	if models.seen[name] {
		return name
	}
	if len(models.seen) >= maxModels {
		return "other"
	}
	models.seen[name] = true
	return name
}

// observeModel counts one model request of provider and model.
func observeModel(provider, model string, elapsed time.Duration, u Usage, err error) {
	if provider == "" {
		return
	}
	model = modelLabel(model)
	outcome := outcomeOK
	if err != nil {
		outcome = outcomeError
	}
	metricModelRequest.WithLabelValues(provider, model, outcome).Observe(elapsed.Seconds())
	for typ, n := range map[string]int{"input": u.InputTokens, "output": u.OutputTokens, "cached": u.CachedTokens} {
		if n > 0 {
			metricTokens.WithLabelValues(provider, model, typ).Add(float64(n))
		}
	}
	if u.CostUSD > 0 {
		metricCost.WithLabelValues(provider, model).Add(u.CostUSD)
	}
}

// tracer makes the loop's spans (docs/OPERATIONS.md, "Traces"): a turn,
// its model request, each action, each capture and its settle wait.
var tracer = otel.Tracer("github.com/spotter-harness/spotter/harness")

// Span and attribute names.
const (
	SpanTurn         = "spotter.turn"
	SpanModelRequest = "spotter.model.request"
	SpanAction       = "spotter.action"
	SpanCapture      = "spotter.capture"
	SpanSettle       = "spotter.settle"
)

// endSpan ends span, marking it failed when err is set.
func endSpan(span trace.Span, err error, opts ...trace.SpanEndOption) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(opts...)
}

// settleSpan records a capture's settle wait as a child of the capture's
// span: the display measures the wait, which comes first in a capture.
func settleSpan(ctx context.Context, start time.Time, waited time.Duration, timedOut bool, reason string) {
	_, span := tracer.Start(ctx, SpanSettle, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.Bool("spotter.settle.timed_out", timedOut)))
	if reason != "" {
		span.SetAttributes(attribute.String("spotter.settle.reason", reason))
	}
	span.End(trace.WithTimestamp(start.Add(waited)))
	outcome := "settled"
	if timedOut {
		outcome = "timed_out"
	}
	metricSettle.WithLabelValues(outcome).Observe(waited.Seconds())
}
