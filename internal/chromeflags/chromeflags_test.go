package chromeflags

import (
	"slices"
	"strings"
	"testing"
)

// One --disable-features carries the quiet features and a launcher's, each
// once: Chromium keeps only the last one of a command line.
func TestArgs(t *testing.T) {
	args := Args("Translate,site-per-process", "Translate", " ", "OptimizationHints")
	var flags []string
	for _, a := range args {
		if strings.HasPrefix(a, "--disable-features=") {
			flags = append(flags, a)
		}
	}
	if len(flags) != 1 {
		t.Fatalf("Args() has %d --disable-features flags, want one: %q", len(flags), args)
	}
	got := strings.Split(strings.TrimPrefix(flags[0], "--disable-features="), ",")
	for _, want := range []string{"NetworkTimeServiceQuerying", "AutofillServerCommunication", "Translate", "site-per-process"} {
		if n := strings.Count(","+strings.Join(got, ",")+",", ","+want+","); n != 1 {
			t.Errorf("--disable-features names %s %d times, want once: %q", want, n, got)
		}
	}
	if !slices.Contains(args, "--disable-background-networking") || !slices.Contains(args, "--gaia-url=http://localhost:0/") {
		t.Errorf("Args() = %q, want the quiet switches", args)
	}
	rest, disabled := SplitFeatures([]string{"--a", "--disable-features=X,Y", "--b"})
	if !slices.Equal(rest, []string{"--a", "--b"}) || !slices.Equal(disabled, []string{"X,Y"}) {
		t.Errorf("SplitFeatures() = %q, %q", rest, disabled)
	}
}
