// Package tracelog is a slog.Handler that puts the trace and span ids of
// each record's context (OpenTelemetry's span context) into the record,
// so that a log line can be found from its trace and the other way round.
// A record logged without a context, or in one without a valid span,
// has neither.
package tracelog

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Attribute keys the Handler adds.
const (
	KeyTraceID = "trace_id"
	KeySpanID  = "span_id"
)

// Handler adds KeyTraceID and KeySpanID to the records of a context with
// a valid span, and hands them to the handler it wraps.
type Handler struct{ inner slog.Handler }

// New wraps h.
func New(h slog.Handler) *Handler { return &Handler{inner: h} }

// NewLogger returns a logger writing to w at level: text (logfmt-like
// key=value), or JSON objects, one a line, when json is set; either way
// with the trace and span ids of the record's context.
func NewLogger(w io.Writer, level slog.Leveler, json bool) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, o)
	if json {
		h = slog.NewJSONHandler(w, o)
	}
	return slog.New(New(h))
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle adds the ids of ctx's span to r, if it has one, and hands r on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String(KeyTraceID, sc.TraceID().String()), slog.String(KeySpanID, sc.SpanID().String()))
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs returns a Handler whose records carry attrs.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup returns a Handler that puts the attributes that follow in
// group name (the trace ids too, for records of a grouped logger).
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name)}
}
