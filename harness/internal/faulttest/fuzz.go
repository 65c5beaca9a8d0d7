package faulttest

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// Fixed returns an HTTP client that answers every request, in memory, with
// a 200 holding body as JSON: the way a fuzz test feeds arbitrary bytes to
// an adapter as the provider's response.
func Fixed(body []byte) *http.Client {
	return &http.Client{Transport: fixed(body)}
}

type fixed []byte

func (f fixed) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(f)), ContentLength: int64(len(f)), Request: r}, nil
}

// CheckTurn fails t if turn, decoded from body, is not something the loop
// can act on: its stop reason must be one a model sets, and every call must
// carry actions, a client tool's input, or a DecodeErr.
func CheckTurn(t *testing.T, body []byte, turn harness.Turn) {
	t.Helper()
	switch turn.Stop {
	case harness.StopToolUse, harness.StopEndTurn, harness.StopMaxTokens, harness.StopRefusal, harness.StopPause:
	default:
		t.Fatalf("Next(%q) stop = %q, not one a model sets", body, turn.Stop)
	}
	for i, c := range turn.Calls {
		if c.DecodeErr == nil && c.Input == nil && len(c.Actions) == 0 {
			t.Fatalf("Next(%q) call %d = %+v: no actions, no input and no DecodeErr", body, i, c)
		}
		if c.DecodeErr != nil && c.DecodeErr.Error() == "" {
			t.Fatalf("Next(%q) call %d has an empty DecodeErr", body, i)
		}
		for j, a := range c.Actions {
			if a.Kind == 0 {
				t.Fatalf("Next(%q) call %d action %d has no kind", body, i, j)
			}
		}
	}
}

// Answer returns the Input that answers every call of turn as the loop
// would: a decode error as the result's Err, a client tool with an output,
// a display call with shot. After StopPause it is the empty Input that
// resumes the turn.
func Answer(turn harness.Turn, shot *screen.Shot) harness.Input {
	var in harness.Input
	for _, c := range turn.Calls {
		r := harness.Result{CallID: c.ID}
		switch {
		case c.DecodeErr != nil:
			r.Err, r.Shot = c.DecodeErr, shot
		case c.Input != nil:
			r.Output = "ok"
		default:
			r.Ran, r.Shot = len(c.Actions), shot
		}
		in.Results = append(in.Results, r)
	}
	return in
}
