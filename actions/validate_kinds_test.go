package actions

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateTabsDialogsUploads covers the kinds TestValidate does not:
// tabs, dialogs and uploads, and which check wins when two fail.
func TestValidateTabsDialogsUploads(t *testing.T) {
	tests := []struct {
		name string
		a    Action
		l    Limits
		want string // "" for valid
	}{
		{"switch tab", Action{Kind: SwitchTab, Tab: 3}, Limits{}, ""},
		{"close tab 999", Action{Kind: CloseTab, Tab: 999}, Limits{}, ""},
		{"switch tab negative", Action{Kind: SwitchTab, Tab: -1}, Limits{}, "switch_tab: tab -1 is out of range"},
		{"close tab 1000", Action{Kind: CloseTab, Tab: 1000}, Limits{}, "close_tab: tab 1000 is out of range"},
		{"dialog accept", Action{Kind: Dialog, Accept: true}, Limits{}, ""},
		{"dialog answer", Action{Kind: Dialog, Accept: true, Text: "yes"}, Limits{}, ""},
		{"dialog answer too long", Action{Kind: Dialog, Text: "abcd"}, Limits{MaxText: 3}, "dialog: text is 4 bytes, the limit is 3"},
		{"dialog answer bad UTF-8", Action{Kind: Dialog, Text: "\xff"}, Limits{}, "dialog: text is not valid UTF-8"},
		{"upload", Action{Kind: Upload, Files: []string{"a.txt", "dir/b.pdf"}}, Limits{}, ""},
		{"upload nothing", Action{Kind: Upload}, Limits{}, "upload: files are required"},
		{"upload 17 files", Action{Kind: Upload, Files: make([]string, 17)}, Limits{}, "upload: 17 files, the limit is 16"},
		{"upload empty path", Action{Kind: Upload, Files: []string{"a", ""}}, Limits{}, "upload: files[1] is not a usable path"},
		{"upload NUL", Action{Kind: Upload, Files: []string{"a\x00b"}}, Limits{}, "upload: files[0] is not a usable path"},
		{"upload long path", Action{Kind: Upload, Files: []string{strings.Repeat("a", 4097)}}, Limits{}, "upload: files[0] is not a usable path"},
		{"upload bad UTF-8", Action{Kind: Upload, Files: []string{"\xff"}}, Limits{}, "upload: files[0] is not a usable path"},
		// The order of the checks: an unused field first, then the
		// pointer, then keys and duration, then the kind's own fields.
		{"unused field before a bad path", Action{Kind: Drag, Text: "x", Path: []Point{{X: 1, Y: 1}}}, Limits{}, "drag: text is not used by drag"},
		{"bad path before a bad button", Action{Kind: Drag, Path: []Point{{X: 1, Y: 1}}, Button: 9}, Limits{}, "drag: path needs at least 2 points, it has 1"},
		{"bad modifier before a zero scroll", Action{Kind: Scroll, Modifiers: Chord{"a"}}, Limits{}, "scroll: modifiers: a is not a modifier key"},
		{"bad keys before a bad duration", Action{Kind: HoldKey, Duration: -1}, Limits{}, "hold_key: keys are empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate(tt.l)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate(%v) = %v, want nil", tt.a.LogValue(), err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid)):
				t.Errorf("Validate(%v) = %v, want %q wrapping ErrInvalid", tt.a.LogValue(), err, tt.want)
			}
		})
	}
}
