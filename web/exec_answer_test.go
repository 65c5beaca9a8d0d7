package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
)

// TestDoneJSON checks that an executor call's answer, written with its
// native result copied in, is byte for byte what encoding it whole would
// be (HTML characters escaped, keys in order), with and without the
// optional fields.
func TestDoneJSON(t *testing.T) {
	frame := screen.Frame{ID: "f1", Format: screen.PNG, URL: "https://example.com/?a=1&b=<2>"}
	for _, res := range []session.ExecResult{
		{Done: true, CallID: "toolu_1", Native: json.RawMessage(`{"type":"tool_result","content":[{"type":"image","source":{"data":"iVBORw0KGgo+/="}}]}`), Frame: frame},
		{Done: true, CallID: "c<1>", Native: json.RawMessage(`{"output":"a <b> & c \u2028"}`), Error: "refused: <script>", Frame: frame,
			Message: json.RawMessage(`{"role":"user","content":"x & y"}`)},
		{Done: true, CallID: "c2", Native: json.RawMessage("{\"s\":\"raw <, > and \u2028\"}")},
	} {
		want := map[string]any{"status": "done", "toolCallId": res.CallID, "result": res.Native, "frame": res.Frame}
		if res.Error != "" {
			want["error"] = res.Error
		}
		if res.Message != nil {
			want["message"] = res.Message
		}
		wb, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := doneJSON(res)
		if err != nil {
			t.Fatalf("doneJSON(%s) = %v", res.CallID, err)
		}
		if string(got) != string(wb) {
			t.Errorf("doneJSON(%s) =\n%s\nwant\n%s", res.CallID, got, wb)
		}
	}
	// The codecs' results are json.Marshal's (not checked again); an
	// empty one is an error, not an answer without a result.
	if _, err := doneJSON(session.ExecResult{CallID: "x"}); err == nil {
		t.Errorf("doneJSON(a result without a native result) = nil error")
	}
}

// TestFailCanceled: a request whose session stopped under it answers 503
// with Retry-After when the client is still there, or when this server is
// draining (its requests end with it): another replica answers the same
// request. Only a client that went away is answered 499.
func TestFailCanceled(t *testing.T) {
	for _, tt := range []struct {
		name              string
		clientGone, drain bool
		want              int
	}{
		{"session stopped", false, false, http.StatusServiceUnavailable},
		{"draining", true, true, http.StatusServiceUnavailable},
		{"client gone", true, false, 499},
	} {
		s := &Server{log: slog.New(slog.DiscardHandler)}
		s.draining.Store(tt.drain)
		ctx, cancel := context.WithCancel(t.Context())
		if tt.clientGone {
			cancel()
		}
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequestWithContext(ctx, "POST", "/executor/sessions/s1/call", nil)
		s.fail(c, fmt.Errorf("call: %w", context.Canceled))
		cancel()
		if w.Code != tt.want || (tt.want == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "") {
			t.Errorf("%s: %d, Retry-After %q; want %d", tt.name, w.Code, w.Header().Get("Retry-After"), tt.want)
		}
	}
}
