package batch

import (
	"strings"
	"testing"
	"time"
)

// On a narrow terminal the bar keeps the running jobs' names readable: the
// counts get terser first, and a name is cut in its middle, never to
// nothing.
func TestProgressLineNarrow(t *testing.T) {
	running := []string{"checkout-with-saved-card", "refund-partial-order", "search-by-voucher"}
	tests := []struct {
		width   int
		running []string
		want    []string // substrings of the line
	}{
		{100, nil, []string{"[#########---------------] 3/8  2 passed  1 failed  0 errors  1:05"}},
		{100, running[:1], []string{"[###", "] 3/8  2 passed  1 failed  0 errors  1:05  running: checkout-with-saved-card"}},
		{80, running, []string{"3/8 ok 2 fail 1 err 0 1:05 > checkout-with-saved-card, refund-partial-order, +1"}},
		{60, running, []string{"3/8 ok 2 fail 1 err 0 1:05 > checkout-with-saved-card, +2"}},
		{40, running, []string{"3/8 1:05 > checkout-with-saved-card, +2"}},
		{30, running, []string{"3/8 checkout-wi…saved-card +2"}},
		{20, running, []string{"3/8 checko…-card +2"}},
		{20, nil, []string{"3/8 1:05"}},
	}
	for _, tt := range tests {
		p := &progress{width: tt.width, total: 8, done: 3, passed: 2, failed: 1, running: tt.running}
		got := p.line(65 * time.Second)
		if n := len([]rune(got)); n > tt.width-1 {
			t.Errorf("line(width %d) = %q is %d columns, want at most %d", tt.width, got, n, tt.width-1)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("line(width %d, running %q) = %q, want it to contain %q", tt.width, tt.running, got, w)
			}
		}
		// Whatever the width, the first running job is named by at least
		// minName of its runes.
		if len(tt.running) > 0 {
			name := []rune(tt.running[0])
			if !strings.Contains(got, string(name[:minName/2])) {
				t.Errorf("line(width %d) = %q names no running job readably", tt.width, got)
			}
		}
	}
}

func TestNamesMiddle(t *testing.T) {
	tests := []struct {
		names []string
		room  int
		want  string
	}{
		{[]string{"a", "b"}, 10, "a, b"},
		{[]string{"alpha", "beta", "gamma"}, 14, "alpha, +2"},
		{[]string{"checkout-with-saved-card"}, 12, "checko…-card"},
		{[]string{"checkout-with-saved-card", "x"}, 12, "chec…card +1"},
		{[]string{"job\x1b[31m", "b"}, 20, "job [31m, b"}, // no escape sequence reaches the terminal
	}
	for _, tt := range tests {
		if got := names(tt.names, tt.room); got != tt.want {
			t.Errorf("names(%q, %d) = %q, want %q", tt.names, tt.room, got, tt.want)
		}
	}
}
