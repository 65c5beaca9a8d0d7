package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/screen"
)

// Terminal is an Asker for a person at a terminal. It writes each request
// to its output (the rule, its reason, the action with secret text masked,
// the element it reaches and the page) and reads the answer from its
// input, one line: "y" or "yes" approves, "n" or "no" denies, and either
// may be followed by a reason ("n wrong account"). It asks about one
// request at a time, and drops what was typed before a question appeared,
// so that nothing typed ahead answers a question nobody has read.
//
// NewTerminal starts a goroutine that reads the input until it ends (EOF
// or an error); a process's standard input ends when the process does.
// Once the input has ended, every Ask is a denial.
type Terminal struct {
	in  io.Reader
	out io.Writer

	lines chan string   // lines read, oldest first; closed at the input's end
	turn  chan struct{} // one question at a time
}

// typedAhead bounds the lines a Terminal keeps between questions; they
// are dropped when the next question appears anyway.
const typedAhead = 16

// NewTerminal returns a Terminal that asks on out and reads answers from
// in, from now on.
func NewTerminal(in io.Reader, out io.Writer) *Terminal {
	t := &Terminal{in: in, out: out, lines: make(chan string, typedAhead), turn: make(chan struct{}, 1)}
	go t.read()
	return t
}

// errInputClosed is why a Terminal whose input has ended denies.
var errInputClosed = errors.New("the terminal's input is closed")

// Ask shows r and blocks until the person answers, ctx is done, or the
// input ends (an error). A request that expires while it is shown is
// marked so on the terminal.
func (t *Terminal) Ask(ctx context.Context, r approvals.Request) (approvals.Verdict, error) {
	select {
	case t.turn <- struct{}{}:
		defer func() { <-t.turn }()
	case <-ctx.Done():
		return approvals.Verdict{}, context.Cause(ctx)
	}
	// Anything typed before this question is not an answer to it.
	for drained := false; !drained; {
		select {
		case _, ok := <-t.lines:
			if !ok {
				return approvals.Verdict{}, errInputClosed
			}
		default:
			drained = true
		}
	}
	io.WriteString(t.out, DescribeRequest(r))
	for {
		io.WriteString(t.out, "Approve? y(es) or n(o), then an optional reason: ")
		select {
		case <-ctx.Done():
			fmt.Fprintf(t.out, "\nspotter: no longer waiting for an answer (%s)\n", stoppedWhy(ctx, r))
			return approvals.Verdict{}, context.Cause(ctx)
		case line, ok := <-t.lines:
			if !ok {
				io.WriteString(t.out, "\nspotter: the terminal's input is closed; the action is denied\n")
				return approvals.Verdict{}, errInputClosed
			}
			if v, ok := parseAnswer(line); ok {
				v.By = "terminal"
				fmt.Fprintf(t.out, "spotter: %s\n", map[approvals.VerdictKind]string{approvals.Approve: "approved", approvals.Deny: "denied"}[v.Kind])
				return v, nil
			}
			io.WriteString(t.out, "spotter: answer y or n (a reason may follow).\n")
		}
	}
}

// read sends the input's lines to t.lines until the input ends. A line
// that finds the buffer full is dropped: it was typed ahead.
func (t *Terminal) read() {
	defer close(t.lines)
	sc := bufio.NewScanner(t.in)
	for sc.Scan() {
		select {
		case t.lines <- sc.Text():
		default:
		}
	}
}

// stoppedWhy says why a question was given up.
func stoppedWhy(ctx context.Context, r approvals.Request) string {
	if !r.Deadline.IsZero() && !time.Now().Before(r.Deadline) {
		return fmt.Sprintf("no decision within %v: the action is denied", r.Deadline.Sub(r.Created).Round(time.Second))
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err.Error()
	}
	return "the question was withdrawn"
}

// parseAnswer reads "y", "yes", "approve", "n", "no" or "deny", in any
// case, with an optional reason after a space, a colon or a comma.
func parseAnswer(line string) (approvals.Verdict, bool) {
	line = strings.TrimSpace(line)
	word, reason := line, ""
	if i := strings.IndexFunc(line, func(r rune) bool { return unicode.IsSpace(r) || r == ':' || r == ',' }); i >= 0 {
		word, reason = line[:i], strings.TrimLeft(line[i:], " \t:,")
	}
	switch strings.ToLower(word) {
	case "y", "yes", "a", "approve":
		return approvals.Verdict{Kind: approvals.Approve, Reason: reason}, true
	case "n", "no", "d", "deny":
		return approvals.Verdict{Kind: approvals.Deny, Reason: reason}, true
	}
	return approvals.Verdict{}, false
}

// DescribeRequest is what a person asked about r reads (at a terminal, or
// in an MCP client): the rule and its reason, the action, the element it
// reaches, the page, the model's words. Every text that comes from the
// page or the model is cleaned of control characters, so that a page
// cannot write escape sequences to a terminal.
func DescribeRequest(r approvals.Request) string {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-8s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&b, "\nspotter: approval needed (rule %s)\n", clean(r.Rule, 80))
	line("reason", "%s", clean(r.Reason, 300))
	for _, f := range r.Findings[min(1, len(r.Findings)):] {
		line("also", "%s (rule %s)", clean(f.Reason, 200), clean(f.Rule, 80))
	}
	if r.Index < 0 {
		for _, c := range r.SafetyChecks {
			line("check", "%s: %s", clean(c.Code, 80), clean(c.Message, 300))
		}
	} else {
		line("action", "%s", describeAction(r.Action, r.Marker))
	}
	if e := r.Element; e != nil {
		line("element", "framed at (%.0f,%.0f)-(%.0f,%.0f) of the screenshot", e.Min.X, e.Min.Y, e.Max.X, e.Max.Y)
	}
	if t := r.Target; t != nil {
		line("target", "%s", describeElement(*t))
	}
	if d := r.Dialog; d != nil {
		line("dialog", "%s %s", clean(d.Type, 20), strconv.Quote(clip(d.Message, 200)))
	}
	line("page", "%s", clean(r.Frame.URL, 300))
	if r.Note != "" {
		line("note", "%s", clean(r.Note, 200))
	}
	if r.ModelText != "" {
		line("model", "%s", strconv.Quote(clip(r.ModelText, 300)))
	}
	if !r.Deadline.IsZero() {
		line("expires", "in %v, then the action is denied", time.Until(r.Deadline).Round(time.Second))
	}
	return b.String()
}

// describeAction describes a (in the coordinates the model used; at, when
// known, is its point in the screenshot's pixels). Its text is shown as
// the request carries it: the gate has masked a secret.
func describeAction(a actions.Action, at *actions.Point) string {
	var b strings.Builder
	b.WriteString(a.Kind.String())
	if a.Kind.IsPointer() && a.Button != actions.Left {
		fmt.Fprintf(&b, " (%s button)", a.Button)
	}
	if len(a.Modifiers) > 0 {
		fmt.Fprintf(&b, " holding %s", a.Modifiers)
	}
	switch {
	case a.Kind == actions.Drag && len(a.Path) > 0:
		fmt.Fprintf(&b, " from %v to %v", a.Path[0], a.Path[len(a.Path)-1])
	case at != nil:
		fmt.Fprintf(&b, " at %v in the screenshot", *at)
	case a.HasAt:
		fmt.Fprintf(&b, " at %v", a.At)
	}
	if a.Kind == actions.Scroll {
		fmt.Fprintf(&b, " by (%g,%g)", a.DeltaX, a.DeltaY)
	}
	if a.Text != "" {
		fmt.Fprintf(&b, " %s", strconv.Quote(clip(a.Text, 200)))
	}
	if len(a.Keys) > 0 {
		fmt.Fprintf(&b, " %s", a.Keys)
	}
	if a.URL != "" {
		fmt.Fprintf(&b, " %s", clean(a.URL, 300))
	}
	switch a.Kind {
	case actions.SwitchTab, actions.CloseTab:
		fmt.Fprintf(&b, " %d", a.Tab)
	case actions.Dialog:
		if a.Accept {
			b.WriteString(" accept")
		} else {
			b.WriteString(" dismiss")
		}
	case actions.Upload:
		fmt.Fprintf(&b, " %s", clean(strings.Join(a.Files, ", "), 300))
	}
	return b.String()
}

// describeElement describes the element an action reaches.
func describeElement(t screen.Target) string {
	kind := t.Role
	if kind == "" {
		kind = t.Tag
	}
	if kind == "" {
		kind = "element"
	}
	s := kind
	if t.InputType != "" && t.InputType != kind {
		s += " (" + clean(t.InputType, 20) + ")"
	}
	switch {
	case t.Name != "":
		s += " " + strconv.Quote(clip(t.Name, 100))
	case t.Text != "":
		s += " " + strconv.Quote(clip(t.Text, 100))
	}
	if t.Name != "" && t.Text != "" && !strings.EqualFold(strings.Join(strings.Fields(t.Text), " "), t.Name) {
		s += ", showing " + strconv.Quote(clip(t.Text, 100))
	}
	if t.Href != "" {
		s += " → " + clean(t.Href, 200)
	}
	if t.FormAction != "" && (t.InputType == "submit" || t.InputType == "image" || t.Tag == "form") {
		s += ", form to " + clean(t.FormAction, 200)
	}
	if t.Download {
		s += ", a download"
	}
	if t.FrameURL != "" {
		s += ", in a frame of " + clean(t.FrameURL, 200)
	}
	return s
}

// clip shortens s to n runes, on one line. strconv.Quote then shows any
// control character escaped.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// clean is clip with control and formatting characters (escape sequences,
// bidirectional overrides) shown as escapes instead of written as they are.
func clean(s string, n int) string {
	var b strings.Builder
	for _, r := range clip(s, n) {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
