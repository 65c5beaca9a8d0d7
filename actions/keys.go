package actions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Key is a canonical key name. Canonical names follow the W3C UI Events
// "key" values as Playwright spells them: "Control", "Shift", "Alt", "Meta",
// "Enter", "PageDown", "ArrowLeft", "F5", and single characters such as "a".
// ParseKey turns every other dialect into one of these.
//
// Two names differ from the DOM key value, because the DOM value would be
// ambiguous or invisible: the space bar is "Space" (its DOM key is " "), and
// the numeric keypad's keys are named by their DOM code, "Numpad0" and
// "NumpadAdd" (their DOM keys are "0" and "+", the same as the main
// keyboard's). KeyInfo.DOMKey holds the DOM value of every key.
type Key string

// The modifier keys, in the order a Chord lists them.
const (
	Control Key = "Control"
	Alt     Key = "Alt"
	Shift   Key = "Shift"
	Meta    Key = "Meta" // Windows key, Command on macOS, Super in X11
)

// IsModifier reports whether k is Control, Alt, Shift or Meta.
func (k Key) IsModifier() bool { return modifierRank(k) >= 0 }

func modifierRank(k Key) int {
	switch k {
	case Control:
		return 0
	case Alt:
		return 1
	case Shift:
		return 2
	case Meta:
		return 3
	}
	return -1
}

// Chord is keys pressed together, modifiers first, the main key last.
// A chord of modifiers alone (holding Shift) has no main key.
type Chord []Key

// String joins the chord Playwright-style: "Control+Shift+PageDown".
// ParseChord reads the result back into the same chord.
func (c Chord) String() string {
	s := make([]string, len(c))
	for i, k := range c {
		s[i] = string(k)
	}
	return strings.Join(s, "+")
}

// Modifiers returns the modifier keys of c.
func (c Chord) Modifiers() Chord {
	var m Chord
	for _, k := range c {
		if k.IsModifier() {
			m = append(m, k)
		}
	}
	return m
}

// Main returns the last key of c if it is not a modifier.
func (c Chord) Main() (Key, bool) {
	if len(c) == 0 || c[len(c)-1].IsModifier() {
		return "", false
	}
	return c[len(c)-1], true
}

// MarshalYAML writes c as one string, "Control+w".
func (c Chord) MarshalYAML() (any, error) { return c.String(), nil }

// UnmarshalYAML reads a chord in any dialect ParseChord accepts, or a list of
// key names as ChordOf accepts.
func (c *Chord) UnmarshalYAML(n *yaml.Node) error {
	var (
		v   Chord
		err error
	)
	switch n.Kind {
	case yaml.ScalarNode:
		v, err = ParseChord(n.Value)
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		v, err = ChordOf(names)
	default:
		err = invalidf("line %d: a chord is a string such as \"ctrl+w\" or a list of key names", n.Line)
	}
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// KeyInfo says how to produce a key on a US keyboard layout. It is the one
// table every display backend reads: CDP wants DOMKey, Code, KeyCode and
// Text; VNC wants Keysym.
type KeyInfo struct {
	Key      Key
	DOMKey   string // KeyboardEvent.key: string(Key), except " " for Space, "0" for Numpad0, "+" for NumpadAdd, "Enter" for NumpadEnter
	Code     string // KeyboardEvent.code, the physical key: "KeyA", "PageDown", "Numpad0"
	KeyCode  int    // Windows virtual key code, CDP Input.dispatchKeyEvent windowsVirtualKeyCode
	Keysym   uint32 // X11 keysym, for VNC
	Text     string // what the key types; "" for non-printing keys, "\r" for Enter
	Shift    bool   // the key needs Shift on a US layout ("A", "!")
	Location int    // KeyboardEvent.location: 0 standard, 1 left, 2 right, 3 numpad
}

// LookupKey returns the table entry of the canonical key k. It does not
// normalize: LookupKey("ctrl") is false; use ParseKey first.
func LookupKey(k Key) (KeyInfo, bool) {
	i, ok := keys.info[k]
	return i, ok
}

// KeyForRune returns the key that types r on a US keyboard: "a" for 'a',
// "A" (with Shift) for 'A', Space for ' ', Enter for '\n' and '\r', Tab for
// '\t'. It is false for runes no key types, such as 'é'; backends insert
// those as text.
func KeyForRune(r rune) (KeyInfo, bool) {
	var k Key
	switch r {
	case ' ':
		k = "Space"
	case '\n', '\r':
		k = "Enter"
	case '\t':
		k = "Tab"
	default:
		if r > 0x20 && r < 0x7f {
			k = Key(r)
		}
	}
	return LookupKey(k)
}

// ParseKey returns the canonical key for one key name in any dialect:
// xdotool keysyms ("Return", "Page_Down", "KP_0", "BackSpace", "super",
// "Control_L"), OpenAI's upper case ("CTRL", "PAGEDOWN", "ESC", "LEFT"),
// Playwright and Gemini ("Control", "PageDown", "ArrowLeft") and DOM codes
// ("KeyA", "Digit1", "Minus"). Names longer than one character are matched
// case-insensitively; a single character is itself ("a" and "A" differ).
// An unknown name is an error wrapping ErrInvalid that lists the closest
// valid names.
func ParseKey(s string) (Key, error) {
	if utf8.RuneCountInString(s) == 1 {
		if k, ok := KeyForRune([]rune(s)[0]); ok {
			return k.Key, nil
		}
	} else if k, ok := keys.names[strings.ToLower(s)]; ok {
		return k, nil
	}
	return "", unknownKey(s)
}

func unknownKey(s string) error {
	switch utf8.RuneCountInString(s) {
	case 0:
		return invalidf("empty key name")
	case 1:
		return invalidf("key %q is not on a US keyboard (type it as text instead)", s)
	}
	return invalidf("unknown key %q (closest: %s)", clip(s), strings.Join(closestKeys(s, 3), ", "))
}

// closestKeys returns the n canonical keys with a spelling nearest to s by
// edit distance, ignoring case.
func closestKeys(s string, n int) []string {
	in := []rune(strings.ToLower(s))
	if len(in) > 32 {
		in = in[:32]
	}
	best := map[Key]int{}
	for name, k := range keys.names {
		d := editDistance(in, []rune(name))
		if old, ok := best[k]; !ok || d < old {
			best[k] = d
		}
	}
	ks := slices.DeleteFunc(slices.Clone(keys.order), func(k Key) bool { _, ok := best[k]; return !ok })
	slices.SortStableFunc(ks, func(a, b Key) int { return cmp.Compare(best[a], best[b]) }) // ties in table order
	out := make([]string, 0, n)
	for _, k := range ks[:min(n, len(ks))] {
		out = append(out, string(k))
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b []rune) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := range a {
		diag := row[0]
		row[0] = i + 1
		for j := range b {
			cost := 1
			if a[i] == b[j] {
				cost = 0
			}
			diag, row[j+1] = row[j+1], min(row[j+1]+1, row[j]+1, diag+cost)
		}
	}
	return row[len(b)]
}

// ParseChord parses keys joined by '+' in any dialect ParseKey accepts:
// "ctrl+shift+Page_Down", "Control+C", "Return". A '+' where a key name is
// expected is the plus key itself, so "ctrl++" and "Control+Plus" are the
// same chord. Spaces around names are ignored; a lone " " is Space.
//
// The result lists modifiers first, in the order Control, Alt, Shift, Meta,
// then at most one main key. In a chord with modifiers a letter is lower
// case: every dialect writes ctrl+c as "Control+C" at times and none of
// them means Shift by it, so Shift is always explicit.
func ParseChord(s string) (Chord, error) {
	var names []string
	for i := 0; ; {
		var name string
		if i < len(s) && s[i] == '+' {
			name = "+"
		} else {
			name, _, _ = strings.Cut(s[i:], "+")
		}
		i += len(name)
		if t := strings.TrimSpace(name); t != "" {
			name = t
		}
		names = append(names, name)
		if i == len(s) {
			break
		}
		if s[i] != '+' {
			return nil, invalidf("chord %q: want '+' after %q", clip(s), clip(name))
		}
		if i++; i == len(s) {
			return nil, invalidf("chord %q ends with '+' (write the plus key as \"Plus\")", clip(s))
		}
	}
	c, err := chordOf(names)
	if err != nil {
		return nil, fmt.Errorf("chord %q: %w", clip(s), err)
	}
	return c, nil
}

// ChordOf makes a chord of separate key names, as OpenAI sends them:
// ["CTRL", "SHIFT", "PAGEDOWN"]. Each name may itself be a chord
// ("ctrl+c"). The result is ordered as ParseChord orders it.
func ChordOf(names []string) (Chord, error) {
	c, err := chordOf(names)
	if err != nil {
		return nil, fmt.Errorf("keys %s: %w", clip(fmt.Sprintf("%q", names)), err)
	}
	return c, nil
}

func chordOf(names []string) (Chord, error) {
	if len(names) == 0 {
		return nil, invalidf("empty chord")
	}
	var (
		mods [4]bool
		main Key
	)
	for _, name := range names {
		var ks []Key
		if len(name) > 1 && strings.Contains(name, "+") {
			c, err := ParseChord(name) // ChordOf(["ctrl+c"])
			if err != nil {
				return nil, err
			}
			ks = c
		} else {
			k, err := ParseKey(name)
			if err != nil {
				return nil, err
			}
			ks = []Key{k}
		}
		for _, k := range ks {
			if r := modifierRank(k); r >= 0 {
				mods[r] = true
				continue
			}
			if main != "" && main != k {
				return nil, invalidf("two main keys, %s and %s", main, k)
			}
			main = k
		}
	}
	var c Chord
	for r, k := range [...]Key{Control, Alt, Shift, Meta} {
		if mods[r] {
			c = append(c, k)
		}
	}
	if main != "" {
		if len(c) > 0 && len(main) == 1 && main[0] >= 'A' && main[0] <= 'Z' {
			main = Key(strings.ToLower(string(main)))
		}
		c = append(c, main)
	}
	return c, nil
}

// checkChord reports whether c is canonical: known keys, no repeats, at
// most one main key and it last. If modsOnly, c may have no main key.
func checkChord(c Chord, modsOnly bool) error {
	for i, k := range c {
		if _, ok := LookupKey(k); !ok {
			if p, err := ParseKey(string(k)); err == nil {
				return invalidf("%q is not a canonical key name, want %q", clip(string(k)), p)
			}
			return unknownKey(string(k))
		}
		if slices.Contains(c[:i], k) {
			return invalidf("%s appears twice", k)
		}
		if k.IsModifier() {
			continue
		}
		if modsOnly {
			return invalidf("%s is not a modifier key", k)
		}
		if i != len(c)-1 {
			if j := slices.IndexFunc(c[i+1:], func(k Key) bool { return !k.IsModifier() }); j >= 0 {
				return invalidf("two main keys, %s and %s", k, c[i+1+j])
			}
			return invalidf("main key %s must come last", k)
		}
	}
	return nil
}

// keyTable is built once from namedKeys and usKeys and never changes.
type keyTable struct {
	info  map[Key]KeyInfo
	order []Key          // table order: ties between suggestions go to the earlier key
	names map[string]Key // every accepted spelling longer than one byte, lower case
}

var keys = buildKeys()

// namedKeys are the keys whose names are words. Aliases are the other
// dialects' spellings, lower case and space-separated.
var namedKeys = []struct {
	info    KeyInfo
	aliases string
}{
	{KeyInfo{Key: Control, Code: "ControlLeft", KeyCode: 0x11, Keysym: 0xffe3, Location: 1}, "ctrl ctl control_l control_r controlleft controlright lctrl rctrl"},
	{KeyInfo{Key: Alt, Code: "AltLeft", KeyCode: 0x12, Keysym: 0xffe9, Location: 1}, "alt_l alt_r altleft altright option opt lalt ralt"},
	{KeyInfo{Key: Shift, Code: "ShiftLeft", KeyCode: 0x10, Keysym: 0xffe1, Location: 1}, "shift_l shift_r shiftleft shiftright lshift rshift"},
	{KeyInfo{Key: Meta, Code: "MetaLeft", KeyCode: 0x5b, Keysym: 0xffeb, Location: 1}, "super super_l super_r meta_l meta_r metaleft metaright cmd command win windows os lwin rwin"},
	{KeyInfo{Key: "Enter", Code: "Enter", KeyCode: 0x0d, Keysym: 0xff0d, Text: "\r"}, "return ret"},
	{KeyInfo{Key: "Tab", Code: "Tab", KeyCode: 0x09, Keysym: 0xff09}, ""},
	{KeyInfo{Key: "Space", DOMKey: " ", Code: "Space", KeyCode: 0x20, Keysym: 0x20, Text: " "}, "spacebar"},
	{KeyInfo{Key: "Backspace", Code: "Backspace", KeyCode: 0x08, Keysym: 0xff08}, "back_space bksp"},
	{KeyInfo{Key: "Delete", Code: "Delete", KeyCode: 0x2e, Keysym: 0xffff}, "del"},
	{KeyInfo{Key: "Escape", Code: "Escape", KeyCode: 0x1b, Keysym: 0xff1b}, "esc"},
	{KeyInfo{Key: "ArrowUp", Code: "ArrowUp", KeyCode: 0x26, Keysym: 0xff52}, "up"},
	{KeyInfo{Key: "ArrowDown", Code: "ArrowDown", KeyCode: 0x28, Keysym: 0xff54}, "down"},
	{KeyInfo{Key: "ArrowLeft", Code: "ArrowLeft", KeyCode: 0x25, Keysym: 0xff51}, "left"},
	{KeyInfo{Key: "ArrowRight", Code: "ArrowRight", KeyCode: 0x27, Keysym: 0xff53}, "right"},
	{KeyInfo{Key: "PageUp", Code: "PageUp", KeyCode: 0x21, Keysym: 0xff55}, "page_up prior pgup"},
	{KeyInfo{Key: "PageDown", Code: "PageDown", KeyCode: 0x22, Keysym: 0xff56}, "page_down next pgdn pgdown"},
	{KeyInfo{Key: "Home", Code: "Home", KeyCode: 0x24, Keysym: 0xff50}, ""},
	{KeyInfo{Key: "End", Code: "End", KeyCode: 0x23, Keysym: 0xff57}, ""},
	{KeyInfo{Key: "Insert", Code: "Insert", KeyCode: 0x2d, Keysym: 0xff63}, "ins"},
	{KeyInfo{Key: "CapsLock", Code: "CapsLock", KeyCode: 0x14, Keysym: 0xffe5}, "caps_lock caps"},
	{KeyInfo{Key: "NumLock", Code: "NumLock", KeyCode: 0x90, Keysym: 0xff7f}, "num_lock"},
	{KeyInfo{Key: "ScrollLock", Code: "ScrollLock", KeyCode: 0x91, Keysym: 0xff14}, "scroll_lock"},
	{KeyInfo{Key: "Pause", Code: "Pause", KeyCode: 0x13, Keysym: 0xff13}, "break"},
	{KeyInfo{Key: "ContextMenu", Code: "ContextMenu", KeyCode: 0x5d, Keysym: 0xff67}, "menu apps"},
	{KeyInfo{Key: "PrintScreen", Code: "PrintScreen", KeyCode: 0x2c, Keysym: 0xff61}, "print print_screen prtsc prtscr"},
	{KeyInfo{Key: "AudioVolumeMute", Code: "AudioVolumeMute", KeyCode: 0xad, Keysym: 0x1008ff12}, "xf86audiomute volumemute mute"},
	{KeyInfo{Key: "AudioVolumeDown", Code: "AudioVolumeDown", KeyCode: 0xae, Keysym: 0x1008ff11}, "xf86audiolowervolume volumedown"},
	{KeyInfo{Key: "AudioVolumeUp", Code: "AudioVolumeUp", KeyCode: 0xaf, Keysym: 0x1008ff13}, "xf86audioraisevolume volumeup"},
	{KeyInfo{Key: "MediaTrackNext", Code: "MediaTrackNext", KeyCode: 0xb0, Keysym: 0x1008ff17}, "xf86audionext"},
	{KeyInfo{Key: "MediaTrackPrevious", Code: "MediaTrackPrevious", KeyCode: 0xb1, Keysym: 0x1008ff16}, "xf86audioprev"},
	{KeyInfo{Key: "MediaStop", Code: "MediaStop", KeyCode: 0xb2, Keysym: 0x1008ff15}, "xf86audiostop"},
	{KeyInfo{Key: "MediaPlayPause", Code: "MediaPlayPause", KeyCode: 0xb3, Keysym: 0x1008ff14}, "xf86audioplay"},
	{KeyInfo{Key: "NumpadAdd", DOMKey: "+", Code: "NumpadAdd", KeyCode: 0x6b, Keysym: 0xffab, Text: "+", Location: 3}, "kp_add"},
	{KeyInfo{Key: "NumpadSubtract", DOMKey: "-", Code: "NumpadSubtract", KeyCode: 0x6d, Keysym: 0xffad, Text: "-", Location: 3}, "kp_subtract"},
	{KeyInfo{Key: "NumpadMultiply", DOMKey: "*", Code: "NumpadMultiply", KeyCode: 0x6a, Keysym: 0xffaa, Text: "*", Location: 3}, "kp_multiply"},
	{KeyInfo{Key: "NumpadDivide", DOMKey: "/", Code: "NumpadDivide", KeyCode: 0x6f, Keysym: 0xffaf, Text: "/", Location: 3}, "kp_divide"},
	{KeyInfo{Key: "NumpadDecimal", DOMKey: ".", Code: "NumpadDecimal", KeyCode: 0x6e, Keysym: 0xffae, Text: ".", Location: 3}, "kp_decimal"},
	{KeyInfo{Key: "NumpadEnter", DOMKey: "Enter", Code: "NumpadEnter", KeyCode: 0x0d, Keysym: 0xff8d, Text: "\r", Location: 3}, "kp_enter"},
}

// usKeys are the printable keys of a US keyboard besides letters: the DOM
// code, Windows key code, the character typed and the one typed with Shift,
// then the xdotool keysym names of those two characters.
var usKeys = []struct {
	code           string
	vk             int
	plain, shifted byte
	names          string
}{
	{"Digit1", 0x31, '1', '!', "exclam"},
	{"Digit2", 0x32, '2', '@', "at"},
	{"Digit3", 0x33, '3', '#', "numbersign"},
	{"Digit4", 0x34, '4', '$', "dollar"},
	{"Digit5", 0x35, '5', '%', "percent"},
	{"Digit6", 0x36, '6', '^', "asciicircum"},
	{"Digit7", 0x37, '7', '&', "ampersand"},
	{"Digit8", 0x38, '8', '*', "asterisk"},
	{"Digit9", 0x39, '9', '(', "parenleft"},
	{"Digit0", 0x30, '0', ')', "parenright"},
	{"Backquote", 0xc0, '`', '~', "grave asciitilde"},
	{"Minus", 0xbd, '-', '_', "minus underscore"},
	{"Equal", 0xbb, '=', '+', "equal plus"},
	{"BracketLeft", 0xdb, '[', '{', "bracketleft braceleft"},
	{"BracketRight", 0xdd, ']', '}', "bracketright braceright"},
	{"Backslash", 0xdc, '\\', '|', "backslash bar"},
	{"Semicolon", 0xba, ';', ':', "semicolon colon"},
	{"Quote", 0xde, '\'', '"', "apostrophe quotedbl"},
	{"Comma", 0xbc, ',', '<', "comma less"},
	{"Period", 0xbe, '.', '>', "period greater"},
	{"Slash", 0xbf, '/', '?', "slash question"},
}

func buildKeys() keyTable {
	t := keyTable{info: map[Key]KeyInfo{}, names: map[string]Key{}}
	add := func(i KeyInfo, aliases ...string) {
		i.DOMKey = cmp.Or(i.DOMKey, string(i.Key))
		t.info[i.Key] = i
		t.order = append(t.order, i.Key)
		for _, a := range append(aliases, string(i.Key), i.Code) {
			if len(a) > 1 {
				a = strings.ToLower(a)
				if _, dup := t.names[a]; !dup { // the first key named so wins: the code "Digit1" is "1", not "!"
					t.names[a] = i.Key
				}
			}
		}
	}
	for _, n := range namedKeys {
		add(n.info, strings.Fields(n.aliases)...)
	}
	for n := 1; n <= 24; n++ {
		f := fmt.Sprint("F", n)
		add(KeyInfo{Key: Key(f), Code: f, KeyCode: 0x70 + n - 1, Keysym: 0xffbe + uint32(n-1)})
	}
	for d := range 10 {
		add(KeyInfo{Key: Key(fmt.Sprint("Numpad", d)), Code: fmt.Sprint("Numpad", d), KeyCode: 0x60 + d, Keysym: 0xffb0 + uint32(d),
			DOMKey: fmt.Sprint(d), Text: fmt.Sprint(d), Location: 3}, fmt.Sprint("kp_", d))
	}
	for c := 'a'; c <= 'z'; c++ {
		code := "Key" + strings.ToUpper(string(c))
		add(KeyInfo{Key: Key(c), Code: code, KeyCode: int(c - 'a' + 'A'), Keysym: uint32(c), Text: string(c)})
		add(KeyInfo{Key: Key(c - 'a' + 'A'), Code: code, KeyCode: int(c - 'a' + 'A'), Keysym: uint32(c - 'a' + 'A'), Text: string(c - 'a' + 'A'), Shift: true})
	}
	for _, u := range usKeys {
		names := strings.Fields(u.names)
		plainNames, shiftedNames := names[:len(names)-1], names[len(names)-1:]
		add(KeyInfo{Key: Key(u.plain), Code: u.code, KeyCode: u.vk, Keysym: uint32(u.plain), Text: string(u.plain)}, plainNames...)
		add(KeyInfo{Key: Key(u.shifted), Code: u.code, KeyCode: u.vk, Keysym: uint32(u.shifted), Text: string(u.shifted), Shift: true}, shiftedNames...)
	}
	return t
}
