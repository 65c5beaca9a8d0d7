package screentest

import (
	"slices"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/screen"
)

// CheckConsole checks a display's PageLog: for each of want, a console
// message whose "level source: text" starts with it, and for each of
// gone, none that holds it.
func CheckConsole(t testing.TB, l screen.PageLog, want, gone []string) {
	t.Helper()
	var lines []string
	for _, m := range l.Console {
		lines = append(lines, m.Level+" "+m.Source+": "+m.Text)
	}
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("console = %q, want a message %q...", lines, w)
		}
	}
	for _, g := range gone {
		if slices.ContainsFunc(lines, func(s string) bool { return strings.Contains(s, g) }) {
			t.Errorf("console = %q, want nothing with %q", lines, g)
		}
	}
}
