package gemini_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
)

// FuzzDecodePart feeds DecodePart arbitrary parts (seeds in
// testdata/fuzz/FuzzDecodePart): it never panics, every failure wraps
// actions.ErrInvalid, is in DecodeErr too and speaks no Go, a call with an
// id is answerable, a decoded call has an id and actions, and its result
// encodes.
func FuzzDecodePart(f *testing.F) {
	f.Add([]byte(`{"functionCall":{"id":"fc_1","name":"hotkey","args":{"keys":["Control","a"]}}}`))
	f.Add([]byte(`{"functionCall":{"name":"upload","args":{"files":["a.txt"]}},"thoughtSignature":"c2ln"}`))
	f.Add([]byte(`{"functionCall":{"id":"fc_2","name":"click","args":"{\"x\":1}"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := gemini.DecodePart(raw, gemini.FunctionsAuto)
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) || c.DecodeErr == nil {
				t.Errorf("DecodePart(%q) error = %v, DecodeErr %v, want both wrapping ErrInvalid", raw, err, c.DecodeErr)
			}
			if goish(err.Error()) {
				t.Errorf("DecodePart(%q) error = %q, which speaks Go, not JSON", raw, err)
			}
			if c.ID != "" {
				if out, err := gemini.EncodeResult(c, harness.Result{CallID: c.ID, Shot: shot(t, "", 1), Err: c.DecodeErr}); err != nil || !json.Valid(out) {
					t.Errorf("EncodeResult(DecodePart(%q)) = %s, %v: a call with an id must be answerable", raw, out, err)
				}
			}
			return
		}
		if c.ID == "" || len(c.Actions) == 0 {
			t.Errorf("DecodePart(%q) = id %q with %d actions, want an id and actions", raw, c.ID, len(c.Actions))
		}
		out, err := gemini.EncodeResult(c, harness.Result{Shot: shot(t, "", 1), Acknowledged: c.SafetyChecks})
		if err != nil || !json.Valid(out) {
			t.Errorf("EncodeResult(DecodePart(%q)) = %s, %v", raw, out, err)
		}
	})
}
