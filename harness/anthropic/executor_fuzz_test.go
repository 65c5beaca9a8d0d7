package anthropic_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
)

// FuzzDecodeCall feeds DecodeCall arbitrary blocks (seeds in
// testdata/fuzz/FuzzDecodeCall): it never panics, every failure wraps
// actions.ErrInvalid or ErrUnknownTool, is in DecodeErr too and speaks no
// Go, a call with an id is answerable, a decoded call has an id and
// actions, and its result encodes.
func FuzzDecodeCall(f *testing.F) {
	f.Add([]byte(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"key","text":"ctrl+a BackSpace"}}`))
	f.Add([]byte(`{"type":"tool_use","id":"toolu_2","name":"browser","input":{"action":"upload","files":["a.txt"]}}`))
	f.Add([]byte(`{"type":"tool_use","id":7,"name":"browser","input":"{}"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := anthropic.DecodeCall(raw, display)
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) && !errors.Is(err, anthropic.ErrUnknownTool) {
				t.Errorf("DecodeCall(%q) error = %v, want ErrInvalid or ErrUnknownTool", raw, err)
			}
			if c.DecodeErr == nil {
				t.Errorf("DecodeCall(%q) error %v, but DecodeErr is nil", raw, err)
			}
			if goish(err.Error()) {
				t.Errorf("DecodeCall(%q) error = %q, which speaks Go, not JSON", raw, err)
			}
			if c.ID != "" {
				if out, err := anthropic.EncodeResult(c, harness.Result{CallID: c.ID, Err: c.DecodeErr}); err != nil || !json.Valid(out) {
					t.Errorf("EncodeResult(DecodeCall(%q)) = %s, %v: a call with an id must be answerable", raw, out, err)
				}
			}
			return
		}
		if c.ID == "" || len(c.Actions) == 0 {
			t.Errorf("DecodeCall(%q) = id %q with %d actions, want an id and actions", raw, c.ID, len(c.Actions))
		}
		out, err := anthropic.EncodeResult(c, harness.Result{Err: errors.New("not run")})
		if err != nil || !json.Valid(out) {
			t.Errorf("EncodeResult(DecodeCall(%q)) = %s, %v", raw, out, err)
		}
	})
}
