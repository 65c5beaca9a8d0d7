package trace

import "testing"

func TestOutcomeClass(t *testing.T) {
	tests := []struct {
		sawEnd             bool
		stop, err          string
		wantOutcome, class string
	}{
		{false, "", "", "incomplete", "bad"},
		{false, "end_turn", "", "incomplete", "bad"},
		{true, "end_turn", "", "end_turn", "ok"},
		{true, "end_turn", "trace write failed", "end_turn", "bad"},
		{true, "error", "", "error", "bad"},
		{true, "max_steps", "", "max_steps", "warn"},
		{true, "", "", "unknown", "warn"},
		{true, "", "boom", "unknown", "bad"},
	}
	for _, tt := range tests {
		outcome, class := outcomeClass(tt.sawEnd, tt.stop, tt.err)
		if outcome != tt.wantOutcome || class != tt.class {
			t.Errorf("outcomeClass(%v, %q, %q) = %q, %q; want %q, %q", tt.sawEnd, tt.stop, tt.err, outcome, class, tt.wantOutcome, tt.class)
		}
	}
}
