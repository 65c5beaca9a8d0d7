package openai

import (
	"errors"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

// FuzzDecodeCallItem feeds arbitrary output items to the computer_call and
// function_call decoders: they never panic, every failure is a DecodeErr
// wrapping actions.ErrInvalid, and a decoded call has actions.
func FuzzDecodeCallItem(f *testing.F) {
	for _, s := range []string{
		`{"type":"computer_call","call_id":"c1","actions":[{"type":"click","x":1,"y":2}]}`,
		`{"type":"computer_call","call_id":"c1","action":{"type":"screenshot"},"pending_safety_checks":[{"id":"sc","code":null}]}`,
		`{"type":"computer_call","call_id":"c1","action":null,"actions":null}`,
		`{"type":"function_call","call_id":"f1","name":"navigate","arguments":"{\"url\":\"https://a.b/\"}"}`,
		`{"type":"function_call","call_id":"f1","name":"zoom","arguments":"{\"x1\":0,\"y1\":0,\"x2\":5,\"y2\":5}"}`,
		`{"type":"function_call","call_id":"f1","name":"go_back","arguments":""}`,
		`{"type":"function_call","call_id":"f1","name":"hold_key","arguments":"[1]"}`,
		`{"call_id":7}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	m := &Model{cfg: Config{Tool: ToolGA, Functions: extensionTypes}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for name, decode := range map[string]func([]byte) (int, error){
			"computerCall": func(b []byte) (int, error) {
				c, _ := computerCall(b, string(ToolGA))
				return len(c.Actions), c.DecodeErr
			},
			"functionCall": func(b []byte) (int, error) { c, _ := m.functionCall(b); return len(c.Actions), c.DecodeErr },
		} {
			n, err := decode(raw)
			if err != nil && !errors.Is(err, actions.ErrInvalid) {
				t.Errorf("%s(%q) DecodeErr = %v, want it to wrap actions.ErrInvalid", name, raw, err)
			}
			if err == nil && n == 0 {
				t.Errorf("%s(%q) = no actions and no DecodeErr", name, raw)
			}
		}
	})
}
