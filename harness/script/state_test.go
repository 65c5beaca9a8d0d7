package script_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
)

func TestStateRestore(t *testing.T) {
	src := `
- actions: [{type: click, x: 1, y: 2}]
  expect_error: refused
- actions: [{type: type, text: hi}]
- say: done`
	plain := script.New(turns(t, src), true)
	restored := script.New(turns(t, src), true)
	in := harness.Input{Task: "t"}
	for i := range 3 {
		want, err := plain.Next(t.Context(), in)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		state, err := restored.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		restored = script.New(turns(t, src), true)
		if err := restored.UnmarshalState(state); err != nil {
			t.Fatalf("turn %d: UnmarshalState(%s) error: %v", i, state, err)
		}
		got, err := restored.Next(t.Context(), in)
		if err != nil {
			t.Fatalf("turn %d after restore: %v", i, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(harness.Call{}, "DecodeErr")); diff != "" {
			t.Errorf("turn %d after restore (-want +got):\n%s", i, diff)
		}
		in = harness.Input{}
		for _, c := range got.Calls {
			r := harness.Result{CallID: c.ID}
			if i == 0 {
				r.Err = errors.New("refused by the policy")
			}
			in.Results = append(in.Results, r)
		}
	}
	for _, bad := range []string{`{`, `{"next":9}`, `{"next":-1}`} {
		if err := restored.UnmarshalState([]byte(bad)); err == nil || !strings.Contains(err.Error(), "restore state") {
			t.Errorf("UnmarshalState(%s) error = %v, want a restore state error", bad, err)
		}
	}
}
