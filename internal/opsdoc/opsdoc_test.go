package opsdoc

import "testing"

func TestFamilies(t *testing.T) {
	fs, err := Families("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"spotter_sessions", "spotter_approvals_pending", "spotter_model_tokens_total"} {
		if !fs[name] {
			t.Errorf("Families() lacks %s: %v", name, fs)
		}
	}
}
