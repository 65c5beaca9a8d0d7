package openai_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/openai"
)

// FuzzDecodeCall feeds DecodeCall arbitrary items (seeds in
// testdata/fuzz/FuzzDecodeCall): it never panics, every failure wraps
// actions.ErrInvalid and is in DecodeErr too, a decoded call has an id and
// actions, and its result encodes.
func FuzzDecodeCall(f *testing.F) {
	f.Add([]byte(`{"type":"computer_call","call_id":"c1","actions":[{"type":"keypress","keys":["CTRL","A"]}]}`))
	f.Add([]byte(`{"type":"function_call","call_id":"c2","name":"dialog","arguments":"{\"accept\":true,\"text\":\"Ada\"}"}`))
	f.Add([]byte(`{"type":"function_call","call_id":"c3","name":"switch_tab","arguments":{"tab":1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := openai.DecodeCall(raw, display)
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) || c.DecodeErr == nil {
				t.Errorf("DecodeCall(%q) error = %v, DecodeErr %v, want both wrapping ErrInvalid", raw, err, c.DecodeErr)
			}
			return
		}
		if c.ID == "" || len(c.Actions) == 0 {
			t.Errorf("DecodeCall(%q) = id %q with %d actions, want an id and actions", raw, c.ID, len(c.Actions))
		}
		out, err := openai.EncodeResult(c, harness.Result{Shot: shot("f", ""), Acknowledged: c.SafetyChecks})
		if err != nil || !json.Valid(out) {
			t.Errorf("EncodeResult(DecodeCall(%q)) = %s, %v", raw, out, err)
		}
	})
}
