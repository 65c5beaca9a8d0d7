package tracelog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A record in a context with a span carries the span's ids, in both
// formats; one without a span carries none, and attributes of With stay.
func TestHandler(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))

	var b bytes.Buffer
	log := NewLogger(&b, slog.LevelInfo, true).With("session", "s_1")
	log.InfoContext(ctx, "turn", "step", 2)
	log.Info("no context")
	log.DebugContext(ctx, "below the level")
	var lines []map[string]any
	dec := json.NewDecoder(&b)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %v", len(lines), lines)
	}
	if got := lines[0]; got[KeyTraceID] != tid.String() || got[KeySpanID] != sid.String() || got["session"] != "s_1" || got["step"] != 2.0 {
		t.Errorf("line in a span = %v, want trace_id %s, span_id %s, session s_1, step 2", got, tid, sid)
	}
	if got := lines[1]; got[KeyTraceID] != nil || got["session"] != "s_1" {
		t.Errorf("line without a span = %v, want no trace_id and session s_1", got)
	}

	b.Reset()
	NewLogger(&b, slog.LevelInfo, false).InfoContext(ctx, "text")
	if want := "trace_id=" + tid.String() + " span_id=" + sid.String(); !bytes.Contains(b.Bytes(), []byte(want)) {
		t.Errorf("text line %q lacks %q", b.String(), want)
	}
}
