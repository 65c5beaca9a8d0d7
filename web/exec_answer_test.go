package web

import (
	"encoding/json"
	"testing"

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
