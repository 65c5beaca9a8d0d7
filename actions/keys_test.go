package actions

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		want Key
	}{
		// xdotool keysym names (Anthropic).
		{"Return", "Enter"}, {"Page_Down", "PageDown"}, {"Page_Up", "PageUp"}, {"Prior", "PageUp"}, {"Next", "PageDown"},
		{"KP_0", "Numpad0"}, {"KP_9", "Numpad9"}, {"KP_Add", "NumpadAdd"}, {"KP_Enter", "NumpadEnter"},
		{"BackSpace", "Backspace"}, {"super", Meta}, {"Super_L", Meta}, {"Control_L", Control}, {"Control_R", Control},
		{"ctrl", Control}, {"alt", Alt}, {"cmd", Meta}, {"win", Meta}, {"meta", Meta}, {"option", Alt}, {"Shift_L", Shift},
		{"Escape", "Escape"}, {"Up", "ArrowUp"}, {"Left", "ArrowLeft"}, {"Caps_Lock", "CapsLock"}, {"Print", "PrintScreen"},
		{"Menu", "ContextMenu"}, {"XF86AudioRaiseVolume", "AudioVolumeUp"}, {"XF86AudioMute", "AudioVolumeMute"},
		{"minus", "-"}, {"plus", "+"}, {"exclam", "!"}, {"asciitilde", "~"}, {"quotedbl", `"`}, {"apostrophe", "'"},
		{"bracketleft", "["}, {"braceright", "}"}, {"backslash", `\`}, {"bar", "|"}, {"question", "?"}, {"grave", "`"},
		{"space", "Space"}, {"Tab", "Tab"},
		// OpenAI upper case.
		{"CTRL", Control}, {"SHIFT", Shift}, {"ALT", Alt}, {"CMD", Meta}, {"PAGEDOWN", "PageDown"}, {"ENTER", "Enter"},
		{"ESC", "Escape"}, {"ARROWLEFT", "ArrowLeft"}, {"LEFT", "ArrowLeft"}, {"SPACE", "Space"},
		{"BACKSPACE", "Backspace"}, {"DELETE", "Delete"}, {"TAB", "Tab"}, {"HOME", "Home"}, {"END", "End"},
		// Playwright and Gemini.
		{"Control", Control}, {"PageDown", "PageDown"}, {"ArrowLeft", "ArrowLeft"}, {"Meta", Meta}, {"F1", "F1"},
		{"f12", "F12"}, {"F24", "F24"}, {"Insert", "Insert"}, {"Numpad5", "Numpad5"}, {"NumpadDecimal", "NumpadDecimal"},
		{"AudioVolumeDown", "AudioVolumeDown"}, {"MediaPlayPause", "MediaPlayPause"}, {"Plus", "+"},
		// DOM codes.
		{"KeyA", "a"}, {"keyz", "z"}, {"Digit1", "1"}, {"Digit0", "0"}, {"Minus", "-"}, {"Equal", "="}, {"Quote", "'"},
		{"Backquote", "`"}, {"Slash", "/"}, {"ControlLeft", Control}, {"MetaRight", Meta},
		// Single characters are themselves.
		{"a", "a"}, {"A", "A"}, {"1", "1"}, {"!", "!"}, {"+", "+"}, {"~", "~"}, {" ", "Space"}, {"\n", "Enter"}, {"\t", "Tab"},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseKeyErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Pgdwn", `unknown key "Pgdwn" (closest: PageDown, ArrowDown, PageUp)`},
		{"Entr", `unknown key "Entr" (closest: Enter, End, Control)`},
		{"Contrl", `unknown key "Contrl" (closest: Control, Alt, Enter)`},
		{"", "empty key name"},
		{"é", `key "é" is not on a US keyboard (type it as text instead)`},
		{"ctrl+c", `unknown key "ctrl+c" (closest: Control, PrintScreen, :)`},
		{strings.Repeat("x", 100), `unknown key "` + strings.Repeat("x", 64) + `…" (closest: MediaTrackNext, PageDown, ContextMenu)`},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseKey(%q) = %q, %v; want error %q wrapping ErrInvalid", tt.in, got, err, tt.want)
		}
	}
}

func TestParseChord(t *testing.T) {
	tests := []struct {
		in   string
		want Chord
	}{
		{"ctrl+shift+Page_Down", Chord{Control, Shift, "PageDown"}},
		{"CTRL+SHIFT+PAGEDOWN", Chord{Control, Shift, "PageDown"}},
		{"Control+Shift+PageDown", Chord{Control, Shift, "PageDown"}},
		{"Control+C", Chord{Control, "c"}},
		{"ctrl+c", Chord{Control, "c"}},
		{"Shift+A", Chord{Shift, "a"}},
		{"A", Chord{"A"}},
		{"Return", Chord{"Enter"}},
		{"ctrl++", Chord{Control, "+"}},
		{"Control+Plus", Chord{Control, "+"}},
		{"+", Chord{"+"}},
		{"ctrl+-", Chord{Control, "-"}},
		{"meta+shift+alt+ctrl+x", Chord{Control, Alt, Shift, Meta, "x"}},
		{"shift+super+Q", Chord{Shift, Meta, "q"}},
		{"alt+F4", Chord{Alt, "F4"}},
		{"Shift", Chord{Shift}},
		{"shift+ctrl", Chord{Control, Shift}},
		{"ctrl+Control_L+c", Chord{Control, "c"}},
		{"ctrl + c", Chord{Control, "c"}},
		{"ctrl+ ", Chord{Control, "Space"}},
		{"ctrl+KP_0", Chord{Control, "Numpad0"}},
		{"ctrl+!", Chord{Control, "!"}},
	}
	for _, tt := range tests {
		got, err := ParseChord(tt.in)
		if err != nil {
			t.Errorf("ParseChord(%q) = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseChord(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseChordErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `chord "": empty key name`},
		{"ctrl+", `chord "ctrl+" ends with '+' (write the plus key as "Plus")`},
		{"+a", `chord "+a": want '+' after "+"`},
		{"ctrl+a+b", `chord "ctrl+a+b": two main keys, a and b`},
		{"ctrl+Pgdwn", `chord "ctrl+Pgdwn": unknown key "Pgdwn" (closest: PageDown, ArrowDown, PageUp)`},
		{"ctrl c", `chord "ctrl c": unknown key "ctrl c" (closest: Control, PrintScreen, :)`},
		{"ctrl+é", `chord "ctrl+é": key "é" is not on a US keyboard (type it as text instead)`},
	}
	for _, tt := range tests {
		got, err := ParseChord(tt.in)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseChord(%q) = %v, %v; want error %q wrapping ErrInvalid", tt.in, got, err, tt.want)
		}
	}
}

func TestChordOf(t *testing.T) {
	tests := []struct {
		in      []string
		want    Chord
		wantErr string
	}{
		{in: []string{"CTRL", "SHIFT", "PAGEDOWN"}, want: Chord{Control, Shift, "PageDown"}},
		{in: []string{"CTRL", "C"}, want: Chord{Control, "c"}},
		{in: []string{"C", "CTRL"}, want: Chord{Control, "c"}},
		{in: []string{"ENTER"}, want: Chord{"Enter"}},
		{in: []string{"SHIFT"}, want: Chord{Shift}},
		{in: []string{"CTRL", "+"}, want: Chord{Control, "+"}},
		{in: []string{"ctrl+c"}, want: Chord{Control, "c"}},
		{in: []string{"shift", "ctrl+c"}, want: Chord{Control, Shift, "c"}},
		{in: nil, wantErr: `keys []: empty chord`},
		{in: []string{"A", "B"}, wantErr: `keys ["A" "B"]: two main keys, A and B`},
		{in: []string{"CTRL", "PGDWN"}, wantErr: `keys ["CTRL" "PGDWN"]: unknown key "PGDWN" (closest: PageDown, ArrowDown, PageUp)`},
	}
	for _, tt := range tests {
		got, err := ChordOf(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrInvalid) {
				t.Errorf("ChordOf(%q) = %v, %v; want error %q wrapping ErrInvalid", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ChordOf(%q) = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ChordOf(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestChordParts(t *testing.T) {
	tests := []struct {
		in       Chord
		wantMods Chord
		wantMain Key
		wantOK   bool
	}{
		{Chord{Control, Shift, "PageDown"}, Chord{Control, Shift}, "PageDown", true},
		{Chord{"a"}, nil, "a", true},
		{Chord{Shift}, Chord{Shift}, "", false},
		{nil, nil, "", false},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.wantMods, tt.in.Modifiers()); diff != "" {
			t.Errorf("%v.Modifiers() (-want +got):\n%s", tt.in, diff)
		}
		if got, ok := tt.in.Main(); got != tt.wantMain || ok != tt.wantOK {
			t.Errorf("%v.Main() = %q, %v; want %q, %v", tt.in, got, ok, tt.wantMain, tt.wantOK)
		}
	}
}

// TestKeyTable checks every table entry: complete, and read back by
// ParseKey and ParseChord as itself.
func TestKeyTable(t *testing.T) {
	codes := map[string]bool{}
	for _, k := range keys.order {
		i, ok := LookupKey(k)
		if !ok || i.Key != k {
			t.Errorf("LookupKey(%q) = %+v, %v", k, i, ok)
			continue
		}
		if i.Code == "" || i.KeyCode == 0 || i.Keysym == 0 || i.DOMKey == "" {
			t.Errorf("LookupKey(%q) = %+v, want Code, KeyCode, Keysym and DOMKey set", k, i)
		}
		codes[i.Code] = true
		if got, err := ParseKey(string(k)); got != k || err != nil {
			t.Errorf("ParseKey(%q) = %q, %v; want itself", k, got, err)
		}
		for _, c := range []Chord{{k}, {Control, k}, {Control, Alt, Shift, Meta, k}} {
			if k.IsModifier() && len(c) > 1 || len(k) == 1 && k[0] >= 'A' && k[0] <= 'Z' && len(c) > 1 {
				continue // not canonical: repeats a modifier, or a capital with modifiers
			}
			got, err := ParseChord(c.String())
			if err != nil {
				t.Errorf("ParseChord(%q) = %v", c.String(), err)
			} else if diff := cmp.Diff(c, got); diff != "" {
				t.Errorf("ParseChord(%q) (-want +got):\n%s", c.String(), diff)
			}
			if err := checkChord(c, false); err != nil {
				t.Errorf("checkChord(%v) = %v", c, err)
			}
		}
	}
	if len(keys.order) != len(keys.info) {
		t.Errorf("key table has %d entries and %d keys: a key is listed twice", len(keys.order), len(keys.info))
	}
	// The physical keys of a US keyboard: 26 letters, 10 digits, 11
	// punctuation keys, 24 function keys, 16 keypad keys, and the rest.
	if got, want := len(codes), 26+10+11+24+16+32; got != want {
		t.Errorf("key table has %d physical keys, want %d", got, want)
	}
}

func TestLookupKey(t *testing.T) {
	tests := []KeyInfo{
		{Key: "a", DOMKey: "a", Code: "KeyA", KeyCode: 65, Keysym: 0x61, Text: "a"},
		{Key: "A", DOMKey: "A", Code: "KeyA", KeyCode: 65, Keysym: 0x41, Text: "A", Shift: true},
		{Key: "!", DOMKey: "!", Code: "Digit1", KeyCode: 49, Keysym: 0x21, Text: "!", Shift: true},
		{Key: "~", DOMKey: "~", Code: "Backquote", KeyCode: 192, Keysym: 0x7e, Text: "~", Shift: true},
		{Key: "/", DOMKey: "/", Code: "Slash", KeyCode: 191, Keysym: 0x2f, Text: "/"},
		{Key: "Enter", DOMKey: "Enter", Code: "Enter", KeyCode: 13, Keysym: 0xff0d, Text: "\r"},
		{Key: "Space", DOMKey: " ", Code: "Space", KeyCode: 32, Keysym: 0x20, Text: " "},
		{Key: "Tab", DOMKey: "Tab", Code: "Tab", KeyCode: 9, Keysym: 0xff09},
		{Key: "Control", DOMKey: "Control", Code: "ControlLeft", KeyCode: 17, Keysym: 0xffe3, Location: 1},
		{Key: "Meta", DOMKey: "Meta", Code: "MetaLeft", KeyCode: 91, Keysym: 0xffeb, Location: 1},
		{Key: "PageDown", DOMKey: "PageDown", Code: "PageDown", KeyCode: 34, Keysym: 0xff56},
		{Key: "F1", DOMKey: "F1", Code: "F1", KeyCode: 112, Keysym: 0xffbe},
		{Key: "F24", DOMKey: "F24", Code: "F24", KeyCode: 135, Keysym: 0xffd5},
		{Key: "Numpad0", DOMKey: "0", Code: "Numpad0", KeyCode: 96, Keysym: 0xffb0, Text: "0", Location: 3},
		{Key: "NumpadEnter", DOMKey: "Enter", Code: "NumpadEnter", KeyCode: 13, Keysym: 0xff8d, Text: "\r", Location: 3},
		{Key: "AudioVolumeUp", DOMKey: "AudioVolumeUp", Code: "AudioVolumeUp", KeyCode: 175, Keysym: 0x1008ff13},
	}
	for _, want := range tests {
		got, ok := LookupKey(want.Key)
		if diff := cmp.Diff(want, got); !ok || diff != "" {
			t.Errorf("LookupKey(%q) = _, %v (-want +got):\n%s", want.Key, ok, diff)
		}
	}
	for _, k := range []Key{"", "ctrl", "Return", "é", "Control+c"} {
		if got, ok := LookupKey(k); ok {
			t.Errorf("LookupKey(%q) = %+v, true; want false", k, got)
		}
	}
}

func TestKeyForRune(t *testing.T) {
	tests := []struct {
		in     rune
		want   Key
		wantOK bool
	}{
		{'a', "a", true}, {'Z', "Z", true}, {'7', "7", true}, {'&', "&", true}, {'"', `"`, true},
		{' ', "Space", true}, {'\n', "Enter", true}, {'\r', "Enter", true}, {'\t', "Tab", true},
		{'é', "", false}, {'€', "", false}, {0, "", false}, {0x7f, "", false}, {'\b', "", false},
	}
	for _, tt := range tests {
		got, ok := KeyForRune(tt.in)
		if got.Key != tt.want || ok != tt.wantOK {
			t.Errorf("KeyForRune(%q) = %q, %v; want %q, %v", tt.in, got.Key, ok, tt.want, tt.wantOK)
		}
	}
	// Every printable ASCII character types itself.
	for r := rune(0x21); r < 0x7f; r++ {
		if got, ok := KeyForRune(r); !ok || got.Text != string(r) {
			t.Errorf("KeyForRune(%q) = %+v, %v; want Text %q", r, got, ok, string(r))
		}
	}
}

func FuzzParseChord(f *testing.F) {
	for _, s := range []string{"ctrl+shift+Page_Down", "Control+C", "ctrl++", "Control+Plus", "+", "Return", "KP_0",
		"shift", "a+b", "ctrl+", " + ", "meta+alt+ctrl+shift+F24", "é", "ctrl+ ", "++", "+++"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseChord(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseChord(%q) = %v, want an error wrapping ErrInvalid", s, err)
			}
			return
		}
		if err := checkChord(c, false); err != nil || len(c) == 0 {
			t.Errorf("ParseChord(%q) = %q, not canonical: %v", s, c, err)
		}
		again, err := ParseChord(c.String())
		if err != nil {
			t.Fatalf("ParseChord(%q) = %q, but ParseChord(%q) = %v", s, c, c.String(), err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Errorf("ParseChord(%q) = %q; read back (-first +second):\n%s", s, c, diff)
		}
		if err := (Action{Kind: Keypress, Keys: c}).Validate(Limits{}); err != nil {
			t.Errorf("Validate(keypress %q) = %v", c, err)
		}
	})
}
