package chat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// UITARSReply is one UI-TARS reply, parsed.
type UITARSReply struct {
	Thought    string // the Thought (or Action_Summary), or the free text before "Action:"
	Reflection string // the Reflection, when the model writes one
	Action     string // the text after "Action:", as the model wrote it

	// Actions is the batch, in the model's coordinates. finished() and
	// call_user() end it: actions after them are ignored.
	Actions []actions.Action

	// Finished is set when the reply ends the task, with finished() or
	// call_user(). Answer is finished's content; CallUser says the model
	// asked for a human.
	Finished bool
	CallUser bool
	Answer   string
}

// uitarsActions are the action names the parser knows, for error messages.
const uitarsActions = "click, left_double, right_single, drag, hotkey, type, scroll, wait, finished, call_user (also left_single, hover, select, press, screenshot)"

// ParseUITARS parses a UI-TARS reply:
//
//	Thought: The search box is at the top.
//	Action: click(start_box='<|box_start|>(640,52)<|box_end|>')
//
// Several actions after "Action:", separated by blank lines (or each with
// its own "Action:"), are a batch. Coordinates are taken as written: a
// point (x,y), or the centre of a box (x1,y1,x2,y2); boxes may carry
// <|box_start|> and <|box_end|> (which servers often strip), or be written
// <point>x y</point> or <bbox>x1 y1 x2 y2</bbox>, and point=, start_point=
// and end_point= name start_box and end_box. Whether they lie on the
// screenshot is for package screen to decide when it maps them.
//
// s is the space the coordinates are in (screen.Grid1000 for UI-TARS 1.0,
// the smart-resized image for 1.5): a scroll moves half its height (or
// width) at a time.
//
// hotkey's key is keys separated by spaces ("ctrl c"); type's content is a
// Python-style string whose trailing line breaks mean "press Enter"; wait()
// waits DefaultWait. An error wraps actions.ErrInvalid and is written for
// the model to read; the reply it returns still holds the Thought.
func ParseUITARS(text string, s screen.Space) (UITARSReply, error) {
	var r UITARSReply
	ext, err := extentOf(s)
	if err != nil {
		return r, err
	}
	text = stripFences(text)
	at, marker := actionMarker(text)
	head := text
	if at >= 0 {
		head = text[:at]
	}
	r.Thought, r.Reflection = thoughtOf(head)
	if at < 0 {
		return r, invalidf(`the reply has no "Action:"; answer in the format "Thought: ...\nAction: ..."`)
	}
	body := text[at+len(marker):]
	r.Action = strings.TrimSpace(body)
	calls, err := scanCalls(body)
	if err != nil {
		return r, err
	}
	if len(calls) == 0 {
		return r, invalidf(`"Action:" is followed by no action (want one of %s)`, uitarsActions)
	}
	for i, c := range calls {
		a, done, err := c.decode(ext)
		if err != nil {
			if len(calls) > 1 {
				return r, invalidf("action %d of %d: %s", i+1, len(calls), reason(err))
			}
			return r, err
		}
		if done {
			r.Finished = true
			r.CallUser = c.name == "call_user"
			r.Answer = c.args["content"].val
			break
		}
		r.Actions = append(r.Actions, a...)
	}
	return r, nil
}

// extentOf returns the size of a UI-TARS coordinate space.
func extentOf(s screen.Space) (screen.Size, error) {
	switch {
	case s.Kind == screen.GridSpace && s.Grid > 0:
		return screen.Size{W: s.Grid, H: s.Grid}, nil
	case s.Kind == screen.ResizedSpace && !s.Resized.Empty():
		return s.Resized, nil
	}
	return screen.Size{}, fmt.Errorf("chat: UI-TARS coordinates need a grid or a resized space, not %v", s)
}

// stripFences trims text and removes lines that are only a code fence
// (the prompt shows the format inside one, and models copy it).
func stripFences(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	out := lines[:0]
	for _, l := range lines {
		if isFence(strings.TrimSpace(l)) {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// isFence reports whether a line is a code fence, with an optional
// language name: "```" or "```text".
func isFence(line string) bool {
	lang, ok := strings.CutPrefix(line, "```")
	if !ok {
		return false
	}
	for _, r := range lang {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// actionMarker finds the first "Action:" (or with a full-width colon) at
// the start of text or after white space, and returns its index and the
// marker, or -1.
func actionMarker(text string) (int, string) {
	for i := 0; i < len(text); i++ {
		if i > 0 {
			prev, _ := utf8.DecodeLastRuneInString(text[:i])
			if !unicode.IsSpace(prev) {
				continue
			}
		}
		if m := markerAt(text[i:]); m != "" {
			return i, m
		}
	}
	return -1, ""
}

// markerAt returns the "Action:" marker s starts with, or "".
func markerAt(s string) string {
	for _, m := range [...]string{"Action:", "Action："} {
		if strings.HasPrefix(s, m) {
			return m
		}
	}
	return ""
}

// thoughtOf splits the text before "Action:" into the thought and the
// reflection.
func thoughtOf(head string) (thought, reflection string) {
	head = strings.TrimSpace(head)
	if rest, ok := strings.CutPrefix(head, "Reflection:"); ok {
		if refl, summary, ok := strings.Cut(rest, "Action_Summary:"); ok {
			return strings.TrimSpace(summary), strings.TrimSpace(refl)
		}
		return "", strings.TrimSpace(rest)
	}
	if _, t, ok := strings.Cut(head, "Thought:"); ok {
		return strings.TrimSpace(t), ""
	}
	if t, ok := strings.CutPrefix(head, "Action_Summary:"); ok {
		return strings.TrimSpace(t), ""
	}
	return head, ""
}

// uitarsCall is one action as written: name(key='value', ...).
type uitarsCall struct {
	name string
	args map[string]uitarsArg
}

type uitarsArg struct {
	val string
}

// scanner reads actions from the text after "Action:".
type scanner struct {
	s string
	i int
}

func (sc *scanner) skipSpace() {
	for sc.i < len(sc.s) {
		r, n := utf8.DecodeRuneInString(sc.s[sc.i:])
		if !unicode.IsSpace(r) {
			return
		}
		sc.i += n
	}
}

func (sc *scanner) ident() string {
	start := sc.i
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || sc.i > start && c >= '0' && c <= '9' {
			sc.i++
			continue
		}
		break
	}
	return sc.s[start:sc.i]
}

func (sc *scanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

// scanCalls reads every action: name(args), separated by white space or
// further "Action:" markers.
func scanCalls(body string) ([]uitarsCall, error) {
	sc := &scanner{s: body}
	var calls []uitarsCall
	for {
		sc.skipSpace()
		if sc.i == len(sc.s) {
			return calls, nil
		}
		if m := markerAt(sc.s[sc.i:]); m != "" {
			sc.i += len(m)
			continue
		}
		start := sc.i
		name := sc.ident()
		sc.skipSpace()
		if name == "" || sc.peek() != '(' {
			if len(calls) > 0 {
				return nil, invalidf("unexpected text after the actions: %s (separate actions with a blank line; write nothing after them)", quoteClip(sc.s[start:]))
			}
			return nil, invalidf("want an action such as click(start_box='<|box_start|>(x,y)<|box_end|>'), got %s", quoteClip(sc.s[start:]))
		}
		sc.i++ // (
		args, err := sc.args(name)
		if err != nil {
			return nil, err
		}
		calls = append(calls, uitarsCall{name: name, args: args})
	}
}

// args reads named arguments up to and including the closing parenthesis.
func (sc *scanner) args(name string) (map[string]uitarsArg, error) {
	args := map[string]uitarsArg{}
	for {
		sc.skipSpace()
		switch sc.peek() {
		case ')':
			sc.i++
			return args, nil
		case 0:
			return nil, invalidf("%s: missing ')'", name)
		}
		key := sc.ident()
		sc.skipSpace()
		if key == "" || sc.peek() != '=' {
			return nil, invalidf("%s: arguments must be named, as in %s(start_box='...'), got %s", name, name, quoteClip(sc.s[sc.i:]))
		}
		sc.i++ // =
		sc.skipSpace()
		var (
			v   uitarsArg
			err error
		)
		if q := sc.peek(); q == '\'' || q == '"' {
			v.val, err = sc.quoted(name, key)
		} else {
			v.val, err = sc.bare(name, key)
		}
		if err != nil {
			return nil, err
		}
		key = canonicalArg(key)
		if _, dup := args[key]; dup {
			return nil, invalidf("%s: argument %s is given twice", name, key)
		}
		args[key] = v
		sc.skipSpace()
		switch sc.peek() {
		case ',':
			sc.i++
		case ')':
		case 0:
			return nil, invalidf("%s: missing ')'", name)
		default:
			return nil, invalidf("%s: want ',' or ')' after argument %s, got %s", name, key, quoteClip(sc.s[sc.i:]))
		}
	}
}

// canonicalArg maps the point spellings of some releases to the box names.
func canonicalArg(key string) string {
	switch key {
	case "point", "start_point":
		return "start_box"
	case "end_point":
		return "end_box"
	}
	return key
}

// quoted reads a string in single or double quotes with Python's escapes.
// Models often leave an apostrophe unescaped ('don't'), so a quote closes
// the string only where an argument can end: before ')' or the end of the
// text, or before ',' and another name=.
func (sc *scanner) quoted(name, key string) (string, error) {
	q := sc.s[sc.i]
	sc.i++
	var b strings.Builder
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '\\' && sc.i+1 < len(sc.s):
			sc.i += 2
			switch e := sc.s[sc.i-1]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"':
				b.WriteByte(e)
			default: // as Python: an unknown escape keeps its backslash
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case c == q && sc.closes(sc.i+1):
			sc.i++
			return b.String(), nil
		default:
			b.WriteByte(c)
			sc.i++
		}
	}
	return "", invalidf("%s: the string of %s has no closing quote", name, key)
}

// closes reports whether a quote just before j can end an argument.
func (sc *scanner) closes(j int) bool {
	rest := strings.TrimLeftFunc(sc.s[j:], unicode.IsSpace)
	if rest == "" || rest[0] == ')' {
		return true
	}
	if rest[0] != ',' {
		return false
	}
	next := &scanner{s: strings.TrimLeftFunc(rest[1:], unicode.IsSpace)}
	if next.peek() == ')' {
		return true
	}
	if next.ident() == "" {
		return false
	}
	next.skipSpace()
	return next.peek() == '='
}

// bare reads an unquoted value, such as 5 or (100,200) or
// <|box_start|>(100,200)<|box_end|>: up to ',' or ')' outside brackets.
func (sc *scanner) bare(name, key string) (string, error) {
	start, depth := sc.i, 0
	for ; sc.i < len(sc.s); sc.i++ {
		switch sc.s[sc.i] {
		case '(', '[':
			depth++
		case ']':
			depth--
		case ')':
			if depth == 0 {
				return strings.TrimSpace(sc.s[start:sc.i]), nil
			}
			depth--
		case ',':
			if depth == 0 {
				return strings.TrimSpace(sc.s[start:sc.i]), nil
			}
		case '\n':
			if depth <= 0 {
				return "", invalidf("%s: the value of %s runs past the end of the line (quote it: %s='...')", name, key, key)
			}
		}
	}
	return "", invalidf("%s: missing ')'", name)
}

// decode turns a call into canonical actions. done reports finished() or
// call_user().
func (c uitarsCall) decode(ext screen.Size) (as []actions.Action, done bool, err error) {
	one := func(a actions.Action, err error) ([]actions.Action, bool, error) {
		if err != nil {
			return nil, false, err
		}
		return []actions.Action{a}, false, nil
	}
	switch c.name {
	case "click", "left_single":
		return one(c.pointer(actions.Click, actions.Left))
	case "left_double":
		return one(c.pointer(actions.DoubleClick, actions.Left))
	case "right_single":
		return one(c.pointer(actions.Click, actions.Right))
	case "hover":
		return one(c.pointer(actions.Move, actions.Left))
	case "drag", "select":
		from, err := c.point("start_box", true)
		if err != nil {
			return nil, false, err
		}
		to, err := c.point("end_box", true)
		if err != nil {
			return nil, false, err
		}
		return one(actions.Action{Kind: actions.Drag, Path: []actions.Point{from, to}}, nil)
	case "hotkey", "press":
		keys, ok := c.text("key")
		if !ok {
			keys, ok = c.text(c.name)
		}
		if !ok || strings.TrimSpace(keys) == "" {
			return nil, false, invalidf("%s: missing key (want %s(key='ctrl c'))", c.name, c.name)
		}
		names := strings.Fields(keys)
		for _, k := range names {
			if len(k) == 1 || !strings.Contains(k, "+") {
				if _, err := actions.ParseKey(k); err != nil {
					return nil, false, invalidf("%s: %s", c.name, reason(err))
				}
			}
		}
		chord, err := actions.ChordOf(names)
		if err != nil {
			return nil, false, invalidf("%s: key %s: %s", c.name, quoteClip(keys), reason(err))
		}
		return one(actions.Action{Kind: actions.Keypress, Keys: chord}, nil)
	case "type":
		return c.typeText()
	case "scroll":
		return one(c.scroll(ext))
	case "wait":
		return one(actions.Action{Kind: actions.Wait, Duration: DefaultWait}, nil)
	case "screenshot":
		return one(actions.Action{Kind: actions.Screenshot}, nil)
	case "finished", "call_user":
		return nil, true, nil
	case "keydown", "keyup", "release":
		return nil, false, invalidf("%s is not available here; press keys together with hotkey(key='ctrl c')", c.name)
	case "long_press", "open_app", "press_home", "press_back":
		return nil, false, invalidf("%s is a phone action; this is a computer (want one of %s)", c.name, uitarsActions)
	}
	return nil, false, invalidf("unknown action %s (want one of %s)", quoteClip(c.name), uitarsActions)
}

func (c uitarsCall) text(key string) (string, bool) {
	v, ok := c.args[key]
	return v.val, ok
}

// pointer decodes a click-like action at start_box.
func (c uitarsCall) pointer(k actions.Kind, b actions.Button) (actions.Action, error) {
	p, err := c.point("start_box", true)
	if err != nil {
		return actions.Action{}, err
	}
	return actions.Action{Kind: k, At: p, HasAt: true, Button: b}, nil
}

// typeText decodes type(content=...): trailing line breaks become Enter.
func (c uitarsCall) typeText() ([]actions.Action, bool, error) {
	content, ok := c.text("content")
	if !ok {
		return nil, false, invalidf("type: missing content (want type(content='...'))")
	}
	if !utf8.ValidString(content) {
		return nil, false, invalidf("type: content is not valid UTF-8")
	}
	text := strings.TrimRight(content, "\r\n")
	enter := len(text) < len(content)
	var as []actions.Action
	if text != "" {
		as = append(as, actions.Action{Kind: actions.Type, Text: text})
	}
	if enter {
		as = append(as, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}})
	}
	if len(as) == 0 {
		return nil, false, invalidf("type: content is empty")
	}
	return as, false, nil
}

// scroll decodes scroll(start_box=..., direction=...): half the space's
// height (or width) in that direction, at start_box or at the pointer.
func (c uitarsCall) scroll(ext screen.Size) (actions.Action, error) {
	a := actions.Action{Kind: actions.Scroll}
	if _, ok := c.args["start_box"]; ok {
		p, err := c.point("start_box", false)
		if err != nil {
			return a, err
		}
		a.At, a.HasAt = p, true
	}
	dir, _ := c.text("direction")
	switch strings.ToLower(strings.TrimSpace(dir)) {
	case "up":
		a.DeltaY = -float64(ext.H) / 2
	case "down":
		a.DeltaY = float64(ext.H) / 2
	case "left":
		a.DeltaX = -float64(ext.W) / 2
	case "right":
		a.DeltaX = float64(ext.W) / 2
	case "":
		return a, invalidf("scroll: missing direction (want up, down, left or right)")
	default:
		return a, invalidf("scroll: direction %s is not one of up, down, left or right", quoteClip(dir))
	}
	return a, nil
}

// point reads a box argument: a point, or the centre of a box.
func (c uitarsCall) point(key string, required bool) (actions.Point, error) {
	v, ok := c.args[key]
	if !ok {
		if !required {
			return actions.Point{}, nil
		}
		return actions.Point{}, invalidf("%s: missing %s (want %s='<|box_start|>(x,y)<|box_end|>')", c.name, key, key)
	}
	nums, err := boxNumbers(v.val)
	if err != nil {
		return actions.Point{}, invalidf("%s: %s %s: %v", c.name, key, quoteClip(v.val), err)
	}
	switch len(nums) {
	case 2:
		return actions.Pt(nums[0], nums[1]), nil
	case 4:
		return actions.Pt(nums[0]/2+nums[2]/2, nums[1]/2+nums[3]/2), nil // halves first: no overflow
	}
	return actions.Point{}, invalidf("%s: %s %s has %d numbers, want 2 (x,y) or 4 (x1,y1,x2,y2)", c.name, key, quoteClip(v.val), len(nums))
}

// boxTokens are the markers a box may be wrapped in.
var boxTokens = strings.NewReplacer("<|box_start|>", " ", "<|box_end|>", " ", "<point>", " ", "</point>", " ", "<bbox>", " ", "</bbox>", " ")

// boxNumbers reads the numbers of a box: "(x,y)", "(x1,y1,x2,y2)",
// "(x1,y1)(x2,y2)", "[x, y]" or "x y", with or without box tokens.
func boxNumbers(s string) ([]float64, error) {
	s = boxTokens.Replace(s)
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(",()[]", r)
	})
	if len(fields) == 0 {
		return nil, fmt.Errorf("no coordinates")
	}
	if len(fields) > 4 {
		return nil, fmt.Errorf("too many numbers, want 2 (x,y) or 4 (x1,y1,x2,y2)")
	}
	nums := make([]float64, len(fields))
	for i, f := range fields {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || strings.ContainsAny(f, "xXpP_") {
			return nil, fmt.Errorf("%s is not a number", quoteClip(f))
		}
		nums[i] = n
	}
	return nums, nil
}

// FormatUITARS writes a canonical action in UI-TARS's action syntax, with
// coordinates as they are (in the model's space). It is the inverse of
// ParseUITARS for the kinds UI-TARS has: left and right clicks, double
// clicks, hover, two-point drags, chords, typing, scrolling (direction
// only: ParseUITARS sets the distance), wait and screenshot. Fake servers
// and tests use it to script a model's replies.
func FormatUITARS(a actions.Action) (string, error) {
	box := func(p actions.Point) string {
		return "'<|box_start|>(" + num(p.X) + "," + num(p.Y) + ")<|box_end|>'"
	}
	plain := a.Button == actions.Left && len(a.Modifiers) == 0
	switch {
	case a.Kind == actions.Click && a.HasAt && len(a.Modifiers) == 0 && (a.Button == actions.Left || a.Button == actions.Right):
		name := "click"
		if a.Button == actions.Right {
			name = "right_single"
		}
		return name + "(start_box=" + box(a.At) + ")", nil
	case a.Kind == actions.DoubleClick && a.HasAt && plain:
		return "left_double(start_box=" + box(a.At) + ")", nil
	case a.Kind == actions.Move && a.HasAt && len(a.Modifiers) == 0:
		return "hover(start_box=" + box(a.At) + ")", nil
	case a.Kind == actions.Drag && len(a.Path) == 2 && plain:
		return "drag(start_box=" + box(a.Path[0]) + ", end_box=" + box(a.Path[1]) + ")", nil
	case a.Kind == actions.Keypress && len(a.Keys) > 0:
		names := make([]string, len(a.Keys))
		for i, k := range a.Keys {
			names[i] = uitarsKeyName(k)
		}
		return "hotkey(key=" + pyQuote(strings.Join(names, " ")) + ")", nil
	case a.Kind == actions.Type && a.Text != "":
		return "type(content=" + pyQuote(a.Text) + ")", nil
	case a.Kind == actions.Scroll && len(a.Modifiers) == 0 && (a.DeltaX == 0) != (a.DeltaY == 0):
		dir := "down"
		switch {
		case a.DeltaY < 0:
			dir = "up"
		case a.DeltaX < 0:
			dir = "left"
		case a.DeltaX > 0:
			dir = "right"
		}
		if !a.HasAt {
			return "scroll(direction='" + dir + "')", nil
		}
		return "scroll(start_box=" + box(a.At) + ", direction='" + dir + "')", nil
	case a.Kind == actions.Wait:
		return "wait()", nil
	case a.Kind == actions.Screenshot:
		return "screenshot()", nil
	}
	return "", invalidf("UI-TARS has no action for %s with these fields", a.Kind)
}

// uitarsKeyName is how UI-TARS writes a key: lower case, "ctrl" for
// Control. Single characters keep their case.
func uitarsKeyName(k actions.Key) string {
	switch k {
	case actions.Control:
		return "ctrl"
	case "Space":
		return "space"
	}
	if utf8.RuneCountInString(string(k)) == 1 {
		return string(k)
	}
	return strings.ToLower(string(k))
}

// pyQuote writes s as a single-quoted Python string that ParseUITARS reads
// back as s.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// addBoxTokens puts <|box_start|> and <|box_end|> back around boxes
// written without them, as '(x,y)': servers strip the special tokens from
// the model's output, and UI-TARS deployments restore them in the history
// the model sees again.
func addBoxTokens(text string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "_box='(")
		if i < 0 {
			break
		}
		start := i + len("_box='")
		end := strings.Index(text[start:], ")'")
		if end < 0 || strings.ContainsAny(text[start:start+end], "'\n<") {
			b.WriteString(text[:start])
			text = text[start:]
			continue
		}
		end += start + 1 // just past ')'
		b.WriteString(text[:start])
		b.WriteString("<|box_start|>")
		b.WriteString(text[start:end])
		b.WriteString("<|box_end|>")
		text = text[end:]
	}
	b.WriteString(text)
	return b.String()
}

// invalidf makes an error wrapping actions.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", actions.ErrInvalid, fmt.Sprintf(format, args...))
}

// reason is the text of an error that wraps actions.ErrInvalid, without
// the sentinel's own words, so that a message names the sentinel once.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), actions.ErrInvalid.Error()+": ")
}

// quoteClip quotes s for an error message, shortened so that a model's
// runaway output does not flood the log.
func quoteClip(s string) string {
	const max = 60
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.Quote(s)
}
