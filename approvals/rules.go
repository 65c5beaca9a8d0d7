package approvals

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/yamldoc"
	"github.com/spotter-harness/spotter/screen"
)

// Supervise says which actions go to a human.
type Supervise string

const (
	// SuperviseFlagged sends the actions that a rule flags (the default).
	SuperviseFlagged Supervise = "flagged"
	// SuperviseAll sends every action that has an effect; screenshots,
	// waits, zooms, cursor_position and list_tabs still run at once.
	SuperviseAll Supervise = "all"
	// SuperviseNone sends nothing but the provider's safety checks, which
	// always need a human.
	SuperviseNone Supervise = "none"
)

// DefaultTimeout is how long a request waits for a human when the rules
// name no timeout. Then it is denied.
const DefaultTimeout = 5 * time.Minute

// MaxTimeout is the longest timeout the rules may name.
const MaxTimeout = 24 * time.Hour

// Names of the built-in rules, in the order they are checked.
const (
	RuleSafetyCheck  = "safety-check"   // a provider's safety check (ApprovalRequest.Index == -1); cannot be disabled
	RulePurchase     = "purchase"       // clicks on buy/pay/checkout/order controls
	RuleDelete       = "delete"         // clicks on delete/remove controls
	RuleSend         = "send"           // clicks on send/submit/publish/confirm controls
	RulePassword     = "password"       // typing, or Enter, in a password field
	RulePayment      = "payment"        // typing, or Enter, in a payment field; typing what looks like a card number
	RuleOutside      = "outside"        // links, form submissions and navigation to origins outside the allowlist
	RuleDownload     = "download"       // clicks on download links
	RuleFilePicker   = "file-picker"    // clicks on <input type=file>; the upload action
	RuleCloseChord   = "close-chord"    // chords that close a tab, a window or the browser; close_tab
	RuleLeavePage    = "leave-page"     // accepting a beforeunload dialog
	RuleNoTarget     = "inspect-failed" // the element under the pointer could not be inspected
	RuleSuperviseAll = "supervise-all"  // supervise: all
)

var builtinNames = []string{RuleSafetyCheck, RulePurchase, RuleDelete, RuleSend, RulePassword, RulePayment,
	RuleOutside, RuleDownload, RuleFilePicker, RuleCloseChord, RuleLeavePage, RuleNoTarget}

// Rules decide which actions need a human. The zero Rules is Default():
// supervise flagged actions with every built-in rule on, no extra hosts and
// a five-minute timeout. Rules are read from YAML (Parse, Load); the
// package documentation describes the format.
type Rules struct {
	// Supervise is "flagged" (the default), "all" or "none".
	Supervise Supervise `yaml:"supervise,omitempty" json:"supervise,omitempty"`
	// Hosts are the origins that links, forms and navigation may reach
	// without a human, in the patterns of actions.Policy.Hosts
	// ("example.com", "localhost:8080", "*.example.com", "*"). The
	// session's Policy hosts and the origin of the page shown are allowed
	// too.
	Hosts []string `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	// Timeout is how long a request waits for a human before it is
	// denied; zero means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Disable names built-in rules to switch off (not "safety-check").
	Disable []string `yaml:"disable,omitempty" json:"disable,omitempty"`
	// Keys are more chords that need a human, besides the close chords.
	Keys []actions.Chord `yaml:"keys,omitempty" json:"keys,omitempty"`
	// Regions are areas of the screenshot, in its image pixels, where
	// every pointer action needs a human. They work on every display.
	Regions []Region `yaml:"regions,omitempty" json:"regions,omitempty"`
	// Rules are the operator's own rules, checked after the built-in ones.
	Rules []Rule `yaml:"rules,omitempty" json:"rules,omitempty"`
}

// Region is an area of the screenshot where pointer actions need a human.
// Its coordinates are pixels of the image sent to the model.
type Region struct {
	Name   string  `yaml:"name" json:"name"`
	Reason string  `yaml:"reason,omitempty" json:"reason,omitempty"`
	X      float64 `yaml:"x" json:"x"`
	Y      float64 `yaml:"y" json:"y"`
	W      float64 `yaml:"w" json:"w"`
	H      float64 `yaml:"h" json:"h"`
}

func (r Region) contains(p actions.Point) bool {
	return p.X >= r.X && p.X < r.X+r.W && p.Y >= r.Y && p.Y < r.Y+r.H
}

// Rule is an operator's rule: it flags an action when every condition it
// sets holds. Within a list, any item may match. Text conditions are
// regular expressions (RE2 syntax), matched without regard to case.
type Rule struct {
	Name   string `yaml:"name" json:"name"`
	Reason string `yaml:"reason" json:"reason"`

	Kinds  []actions.Kind  `yaml:"kinds,omitempty" json:"kinds,omitempty"`   // action kinds; empty: any
	Keys   []actions.Chord `yaml:"keys,omitempty" json:"keys,omitempty"`     // keypress/hold_key chords
	Text   []string        `yaml:"text,omitempty" json:"text,omitempty"`     // typed text
	URL    []string        `yaml:"url,omitempty" json:"url,omitempty"`       // the page's URL, or a navigate action's
	Target *TargetMatch    `yaml:"target,omitempty" json:"target,omitempty"` // needs a DOM
}

// TargetMatch holds conditions on the element an action reaches: the one
// under the pointer for pointer actions, the focused one for keyboard
// actions. Field names follow screen.Target.
type TargetMatch struct {
	Tag          []string `yaml:"tag,omitempty" json:"tag,omitempty"`
	Role         []string `yaml:"role,omitempty" json:"role,omitempty"`
	Name         []string `yaml:"name,omitempty" json:"name,omitempty"`
	InputType    []string `yaml:"input_type,omitempty" json:"input_type,omitempty"`
	Autocomplete []string `yaml:"autocomplete,omitempty" json:"autocomplete,omitempty"`
	Href         []string `yaml:"href,omitempty" json:"href,omitempty"`
	FormAction   []string `yaml:"form_action,omitempty" json:"form_action,omitempty"`
	FrameURL     []string `yaml:"frame_url,omitempty" json:"frame_url,omitempty"`
	Text         []string `yaml:"text,omitempty" json:"text,omitempty"`
	Editable     *bool    `yaml:"editable,omitempty" json:"editable,omitempty"`
	Download     *bool    `yaml:"download,omitempty" json:"download,omitempty"`
}

// Default returns the default rules: every built-in rule on, supervising
// flagged actions, with a five-minute timeout.
func Default() Rules { return Rules{Supervise: SuperviseFlagged, Timeout: DefaultTimeout} }

// Parse reads Rules from YAML. Unknown fields, unknown kinds, keys or
// rule names, malformed host patterns, regions and regular expressions are
// errors. An empty document is Default().
func Parse(b []byte) (Rules, error) {
	r, err := parse(b)
	if err != nil {
		return Rules{}, fmt.Errorf("approval rules: %w", err)
	}
	return r, nil
}

// Load reads Rules from a YAML file, as Parse does.
func Load(path string) (Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Rules{}, err // *fs.PathError names the file
	}
	r, err := parse(b)
	if err != nil {
		return Rules{}, fmt.Errorf("approval rules %s: %w", path, err)
	}
	return r, nil
}

func parse(b []byte) (Rules, error) {
	r := Default()
	if err := yamldoc.Decode(b, &r); errors.Is(err, yamldoc.ErrEmpty) {
		return Default(), nil
	} else if err != nil {
		return Rules{}, err
	}
	if _, err := r.compile(); err != nil {
		return Rules{}, err
	}
	return r, nil
}

// Validate reports whether r is well formed, as Parse checks it.
func (r Rules) Validate() error {
	_, err := r.compile()
	return err
}

// compiled is Rules ready to evaluate.
type compiled struct {
	Rules
	disabled map[string]bool
	rules    []compiledRule
	closers  actions.Policy // forbids the close chords
	keys     actions.Policy // forbids Rules.Keys
}

type compiledRule struct {
	Rule
	keys   actions.Policy
	text   []*regexp.Regexp
	url    []*regexp.Regexp
	target map[string][]*regexp.Regexp // by screen.Target field
}

func (r Rules) compile() (*compiled, error) {
	c := &compiled{Rules: r, disabled: map[string]bool{}}
	switch r.Supervise {
	case "":
		c.Supervise = SuperviseFlagged
	case SuperviseFlagged, SuperviseAll, SuperviseNone:
	default:
		return nil, fmt.Errorf("supervise %q: want all, flagged or none", r.Supervise)
	}
	if r.Timeout < 0 {
		return nil, fmt.Errorf("timeout %v is negative", r.Timeout)
	}
	if r.Timeout > MaxTimeout {
		return nil, fmt.Errorf("timeout %v is longer than %v: a question nobody answers in a day is a denial", r.Timeout, MaxTimeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if err := checkHosts(r.Hosts); err != nil {
		return nil, err
	}
	for _, n := range r.Disable {
		switch {
		case n == RuleSafetyCheck:
			return nil, errors.New("disable: the safety-check rule cannot be disabled: provider safety checks always need a human")
		case !slices.Contains(builtinNames, n):
			return nil, fmt.Errorf("disable: unknown rule %q (built-in rules: %s)", n, strings.Join(builtinNames[1:], ", "))
		}
		c.disabled[n] = true
	}
	for i, k := range r.Keys {
		if len(k) == 0 {
			return nil, fmt.Errorf("keys[%d] is empty", i)
		}
	}
	c.closers = actions.Policy{Allow: actions.Kinds(), ForbidKeys: actions.Standard().ForbidKeys}
	c.keys = actions.Policy{Allow: actions.Kinds(), ForbidKeys: r.Keys}
	names := map[string]bool{}
	for _, n := range builtinNames {
		names[n] = true
	}
	for i, g := range r.Regions {
		switch {
		case g.Name == "":
			return nil, fmt.Errorf("regions[%d]: name is required", i)
		case names[g.Name]:
			return nil, fmt.Errorf("regions[%d]: name %q is already used", i, g.Name)
		case g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0:
			return nil, fmt.Errorf("regions[%d] (%s): want x, y >= 0 and w, h > 0 in image pixels", i, g.Name)
		}
		names[g.Name] = true
	}
	for i, rr := range r.Rules {
		cr, err := compileRule(rr)
		if err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		if names[rr.Name] {
			return nil, fmt.Errorf("rules[%d]: name %q is already used", i, rr.Name)
		}
		names[rr.Name] = true
		c.rules = append(c.rules, cr)
	}
	return c, nil
}

func compileRule(r Rule) (compiledRule, error) {
	c := compiledRule{Rule: r, target: map[string][]*regexp.Regexp{}}
	if r.Name == "" {
		return c, errors.New("name is required")
	}
	if r.Reason == "" {
		return c, fmt.Errorf("%s: reason is required (a human reads it)", r.Name)
	}
	for i, k := range r.Keys {
		if len(k) == 0 {
			return c, fmt.Errorf("%s: keys[%d] is empty", r.Name, i)
		}
	}
	c.keys = actions.Policy{Allow: actions.Kinds(), ForbidKeys: r.Keys}
	var err error
	if c.text, err = compileAll(r.Name, "text", r.Text); err != nil {
		return c, err
	}
	if c.url, err = compileAll(r.Name, "url", r.URL); err != nil {
		return c, err
	}
	conds := len(r.Kinds) + len(r.Keys) + len(r.Text) + len(r.URL)
	if t := r.Target; t != nil {
		for field, pats := range map[string][]string{"tag": t.Tag, "role": t.Role, "name": t.Name,
			"input_type": t.InputType, "autocomplete": t.Autocomplete, "href": t.Href,
			"form_action": t.FormAction, "frame_url": t.FrameURL, "text": t.Text} {
			res, err := compileAll(r.Name, "target."+field, pats)
			if err != nil {
				return c, err
			}
			if len(res) > 0 {
				c.target[field] = res
			}
			conds += len(res)
		}
		if t.Editable != nil {
			conds++
		}
		if t.Download != nil {
			conds++
		}
	}
	if conds == 0 {
		return c, fmt.Errorf("%s: a rule needs at least one condition (kinds, keys, text, url or target)", r.Name)
	}
	return c, nil
}

func compileAll(rule, field string, pats []string) ([]*regexp.Regexp, error) {
	var res []*regexp.Regexp
	for i, p := range pats {
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("%s: %s[%d]: %v", rule, field, i, err)
		}
		res = append(res, re)
	}
	return res, nil
}

// checkHosts checks host patterns as actions.Policy reads them.
func checkHosts(hosts []string) error {
	for _, h := range hosts {
		if _, err := actions.ParseHostPattern(h); err != nil {
			return fmt.Errorf("hosts: %v", err)
		}
	}
	return nil
}

// Subject is what the rules look at: one action (or a call's safety
// checks) and what lies under it.
type Subject struct {
	// Index is the action's index in its call's batch; -1 for the call's
	// provider safety checks.
	Index  int
	Action actions.Action // in model coordinates
	// Mapped is the action in CSS pixels; nil for actions without
	// coordinates.
	Mapped *screen.Mapped
	// Points are where the action lands in the frame's image pixels (a
	// drag's whole path); empty for actions without coordinates.
	Points []actions.Point
	Frame  screen.Frame
	// DOM says whether the display can be hit-tested. Without one, rules
	// on targets do not apply and the action alone decides.
	DOM bool
	// Target is the element the action reaches: under the pointer, or
	// focused for keyboard actions. Nil when unknown.
	Target *screen.Target
	// TargetErr says why the element could not be inspected, if it could
	// not.
	TargetErr error
	// Dialog is the JavaScript dialog open on the page, if known.
	Dialog *screen.Dialog
	// DialogKnown says whether the display reports dialogs at all.
	DialogKnown bool
	// PolicyHosts are the session's Policy.Hosts, also allowed.
	PolicyHosts []string
}

// Finding is one rule that flagged an action.
type Finding struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Evaluate returns the rules that flag s, the first one first; none means
// the action may run without a human. Rules that do not validate flag
// every action (the reason says why), so a broken configuration never lets
// an action through unseen.
func (r Rules) Evaluate(s Subject) []Finding {
	c, err := r.compile()
	if err != nil {
		return []Finding{{Rule: "invalid-rules", Reason: fmt.Sprintf("the approval rules are invalid (%v)", err)}}
	}
	return c.evaluate(s)
}

func (c *compiled) evaluate(s Subject) []Finding {
	if s.Index < 0 {
		return []Finding{{Rule: RuleSafetyCheck, Reason: "the model's provider raised a safety check that needs a human's confirmation"}}
	}
	if c.Supervise == SuperviseNone {
		return nil
	}
	f := &findings{disabled: c.disabled}
	if s.DOM && s.TargetErr != nil && needsTarget(s.Action) {
		f.add(RuleNoTarget, "the element this action reaches could not be inspected (%v)", s.TargetErr)
	}
	if s.Target != nil && activates(s.Action) {
		c.pointerFindings(f, s)
	}
	if s.Target != nil && keyboard(s.Action) {
		c.keyboardFindings(f, s)
	}
	c.kindFindings(f, s)
	c.configuredFindings(f, s)
	if len(f.list) == 0 && c.Supervise == SuperviseAll && hasEffect(s.Action.Kind) {
		f.list = append(f.list, Finding{Rule: RuleSuperviseAll, Reason: "every action of this session is supervised"})
	}
	return f.list
}

// findings collects the rules that flag an action, in order.
type findings struct {
	list     []Finding
	disabled map[string]bool // built-in rules turned off
}

// add records that the built-in rule flags the action, unless it is
// disabled.
func (f *findings) add(rule, format string, args ...any) {
	if !f.disabled[rule] {
		f.list = append(f.list, Finding{Rule: rule, Reason: fmt.Sprintf(format, args...)})
	}
}

// wordRules are the built-in rules on what a control says or where its
// form goes, in the order they are tried: the first that matches flags.
var wordRules = []struct {
	rule   string
	words  *words
	effect string
}{
	{RulePurchase, &purchaseWords, "may spend money"},
	{RuleDelete, &deleteWords, "may delete something"},
	{RuleSend, &sendWords, "may send or submit something"},
}

// pointerFindings applies the built-in rules on what a click activates:
// purchases, deletions, sends (by what an element that acts says, or by
// where the form a click submits goes), downloads, file pickers, and links
// or forms that lead outside the allowed hosts. Static text says nothing:
// a click on "Thank you for your purchase!" buys nothing.
func (c *compiled) pointerFindings(f *findings, s Subject) {
	a, t := s.Action, s.Target
	label := describeTarget(*t)
	endpoint := ""
	if submits(*t) {
		endpoint = t.FormAction
	}
	for _, w := range wordRules {
		if !acts(*t) {
			break
		}
		if said, ok := says(t, *w.words); ok {
			f.add(w.rule, "clicking %s %s", describeSaying(*t, said), w.effect)
			break
		}
		if path, ok := endpointSays(endpoint, *w.words); ok {
			f.add(w.rule, "clicking %s sends a form to %s, which %s", label, path, w.effect)
			break
		}
	}
	if t.Download {
		f.add(RuleDownload, "clicking %s downloads a file", label)
	}
	if t.InputType == "file" {
		f.add(RuleFilePicker, "clicking %s opens a file picker", label)
	}
	if t.Href != "" && (a.Button == actions.Left || a.Button == actions.Middle) {
		if host, ok := c.outside(t.Href, s); ok {
			f.add(RuleOutside, "clicking %s leads to %s, outside the allowed hosts", label, host)
		}
	}
	if t.FormAction != "" && (t.InputType == "submit" || t.InputType == "image") {
		if host, ok := c.outside(t.FormAction, s); ok {
			f.add(RuleOutside, "clicking %s sends a form to %s, outside the allowed hosts", label, host)
		}
	}
}

// keyboardFindings applies the built-in rules on typing and keys in the
// focused element: password and payment fields, and Enter (or a typed
// newline) that follows a link or submits a form outside the allowed hosts.
func (c *compiled) keyboardFindings(f *findings, s Subject) {
	a, t := s.Action, *s.Target
	label := describeTarget(t)
	enter := pressesEnter(a)
	switch {
	case isPassword(t) && a.Kind == actions.Type:
		f.add(RulePassword, "typing into %s, a password field", label)
	case isPassword(t) && enter:
		f.add(RulePassword, "pressing Enter in %s submits a password form", label)
	case isPayment(t) && a.Kind == actions.Type:
		f.add(RulePayment, "typing into %s, a payment field", label)
	case isPayment(t) && enter:
		f.add(RulePayment, "pressing Enter in %s submits a payment form", label)
	}
	// Enter (or a typed newline) follows a focused link and submits the
	// focused field's form, as a click would.
	if !submitsByKey(a, t) {
		return
	}
	if t.Href == "" && t.FormAction != "" {
		c.formFindings(f, t, label)
	}
	if t.Href != "" {
		if host, ok := c.outside(t.Href, s); ok {
			f.add(RuleOutside, "pressing Enter on %s leads to %s, outside the allowed hosts", label, host)
		}
	} else if host, ok := c.outside(t.FormAction, s); ok {
		f.add(RuleOutside, "pressing a key in %s sends a form to %s, outside the allowed hosts", label, host)
	}
}

// formFindings flags a key that submits t's form by what the form's
// default button says or where the form goes, as a click on the button
// would be.
func (c *compiled) formFindings(f *findings, t screen.Target, label string) {
	for _, w := range wordRules {
		if t.FormSubmit != "" && w.words.re.MatchString(t.FormSubmit) {
			f.add(w.rule, "a key in %s submits its form, whose button %q %s", label, clipText(t.FormSubmit, 60), w.effect)
			return
		}
		if path, ok := endpointSays(t.FormAction, *w.words); ok {
			f.add(w.rule, "a key in %s sends its form to %s, which %s", label, path, w.effect)
			return
		}
	}
}

// kindFindings applies the built-in rules on the action alone, which hold
// on every display: card numbers typed, navigation outside the allowed
// hosts, uploads, closing tabs and windows, leaving a page through a dialog.
func (c *compiled) kindFindings(f *findings, s Subject) {
	a := s.Action
	if a.Kind == actions.Type && looksLikeCard(a.Text) {
		f.add(RulePayment, "the typed text looks like a payment card number")
	}
	switch a.Kind {
	case actions.Navigate:
		if host, ok := c.outside(a.URL, s); ok {
			f.add(RuleOutside, "navigating to %s, outside the allowed hosts", host)
		}
	case actions.Upload:
		f.add(RuleFilePicker, "uploading %d file(s) to the page", len(a.Files))
	case actions.CloseTab:
		f.add(RuleCloseChord, "closing tab %d", a.Tab)
	case actions.Keypress, actions.HoldKey:
		if err := c.closers.Check(a); err != nil {
			f.add(RuleCloseChord, "pressing %s may close a tab, a window or the browser", a.Keys)
		}
	case actions.Dialog:
		dialogFindings(f, s)
	}
}

// dialogFindings flags accepting a dialog that leaves the page, or one the
// display cannot name.
func dialogFindings(f *findings, s Subject) {
	switch {
	case !s.Action.Accept:
	case s.Dialog != nil && s.Dialog.Type == "beforeunload":
		f.add(RuleLeavePage, "accepting the page's beforeunload dialog leaves the page (unsaved changes may be lost)")
	case !s.DialogKnown:
		f.add(RuleLeavePage, "accepting a dialog may leave the page, and this display cannot say which dialog is open")
	}
}

// configuredFindings applies the rules the configuration adds: keys,
// regions and custom rules. Disabling built-in rules does not touch them.
func (c *compiled) configuredFindings(f *findings, s Subject) {
	a := s.Action
	if len(c.Keys) > 0 && (a.Kind == actions.Keypress || a.Kind == actions.HoldKey) {
		if err := c.keys.Check(a); err != nil {
			f.list = append(f.list, Finding{Rule: "keys", Reason: fmt.Sprintf("pressing %s needs a human (rules: keys)", a.Keys)})
		}
	}
	for _, g := range c.Regions {
		if slices.ContainsFunc(s.Points, g.contains) {
			f.list = append(f.list, Finding{Rule: g.Name, Reason: cmpOr(g.Reason, fmt.Sprintf("a pointer action in the region %q", g.Name))})
		}
	}
	for _, r := range c.rules {
		if r.matches(s) {
			f.list = append(f.list, Finding{Rule: r.Name, Reason: r.Reason})
		}
	}
}

func (r compiledRule) matches(s Subject) bool {
	a := s.Action
	if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, a.Kind) {
		return false
	}
	if len(r.Keys) > 0 {
		if a.Kind != actions.Keypress && a.Kind != actions.HoldKey || r.keys.Check(a) == nil {
			return false
		}
	}
	if len(r.text) > 0 && (a.Kind != actions.Type || !anyMatch(r.text, a.Text)) {
		return false
	}
	if len(r.url) > 0 {
		// A navigate action goes to its URL; any other action happens on
		// the page shown, and may lead where its link or form goes.
		us := append([]string{s.Frame.URL}, destinations(s)...)
		if a.Kind == actions.Navigate {
			us = []string{a.URL}
		}
		if !slices.ContainsFunc(us, func(u string) bool { return anyMatch(r.url, u) }) {
			return false
		}
	}
	if tm := r.Target; tm != nil {
		t := s.Target
		if t == nil {
			return false // no DOM, or nothing there
		}
		fields := map[string]string{"tag": t.Tag, "role": t.Role, "name": t.Name, "input_type": t.InputType,
			"autocomplete": t.Autocomplete, "href": t.Href, "form_action": t.FormAction, "frame_url": t.FrameURL, "text": t.Text}
		for f, res := range r.target {
			switch f {
			case "name", "text":
				// What the element says: its accessible name or its
				// visible text; either may match. A click on an element
				// that does not act says nothing.
				if activates(a) && !acts(*t) || !anyMatch(res, t.Name) && !anyMatch(res, t.Text) {
					return false
				}
			default:
				if !anyMatch(res, fields[f]) {
					return false
				}
			}
		}
		if tm.Editable != nil && *tm.Editable != t.Editable || tm.Download != nil && *tm.Download != t.Download {
			return false
		}
	}
	return true
}

// destinations returns the URLs a's activation of its target may lead
// to: the link it clicks or presses Enter on, the form its submit button
// (or Enter in a field) sends.
func destinations(s Subject) []string {
	t := s.Target
	if t == nil {
		return nil
	}
	var us []string
	switch a := s.Action; {
	case activates(a):
		if t.Href != "" {
			us = append(us, t.Href)
		}
		if t.FormAction != "" && (t.InputType == "submit" || t.InputType == "image") {
			us = append(us, t.FormAction)
		}
	case keyboard(a) && submitsByKey(a, *t):
		if t.Href != "" {
			us = append(us, t.Href)
		} else if t.FormAction != "" {
			us = append(us, t.FormAction)
		}
	}
	return us
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// outside reports whether raw is an http(s) URL whose origin is neither
// the page's own nor allowed by the hosts, and names its host.
func (c *compiled) outside(raw string, s Subject) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false // javascript:, mailto:, about:blank... go nowhere on the web
	}
	if p, err := url.Parse(s.Frame.URL); err == nil && sameOrigin(u, p) {
		return "", false
	}
	hosts := append(slices.Clone(c.Hosts), s.PolicyHosts...)
	p := actions.Policy{Allow: []actions.Kind{actions.Navigate}, Hosts: hosts}
	if p.Check(actions.Action{Kind: actions.Navigate, URL: raw}) == nil {
		return "", false
	}
	return u.Host, true
}

func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if u.Scheme == "https" {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// activates reports whether a can activate what lies under the pointer.
func activates(a actions.Action) bool {
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick, actions.MouseDown, actions.MouseUp:
		return a.Button == actions.Left || a.Button == actions.Middle
	}
	return false
}

func keyboard(a actions.Action) bool {
	return a.Kind == actions.Type || a.Kind == actions.Keypress || a.Kind == actions.HoldKey
}

// needsTarget reports whether rules look at a's target.
func needsTarget(a actions.Action) bool { return activates(a) || keyboard(a) }

func hasEffect(k actions.Kind) bool {
	switch k {
	case actions.Screenshot, actions.Wait, actions.Zoom, actions.CursorPosition, actions.ListTabs:
		return false
	}
	return true
}

func pressesEnter(a actions.Action) bool {
	return presses(a, "Enter", "Return", "NumpadEnter")
}

func presses(a actions.Action, names ...string) bool {
	if a.Kind != actions.Keypress && a.Kind != actions.HoldKey {
		return false
	}
	for _, k := range a.Keys {
		for _, n := range names {
			if strings.EqualFold(string(k), n) {
				return true
			}
		}
	}
	return false
}

// submitsByKey reports whether a, on the focused element t, may follow a
// link or submit a form: Enter or a typed newline outside a textarea, or
// Space on a submit button.
func submitsByKey(a actions.Action, t screen.Target) bool {
	if t.Tag == "textarea" || t.Role == "textbox" && t.Tag != "input" {
		return false // Enter adds a line
	}
	if pressesEnter(a) || a.Kind == actions.Type && strings.ContainsAny(a.Text, "\r\n") {
		return true
	}
	submit := t.InputType == "submit" || t.InputType == "image"
	return submit && (presses(a, "Space") || a.Kind == actions.Type && strings.Contains(a.Text, " "))
}

func isPassword(t screen.Target) bool { return t.PasswordField() }

// isPayment reports whether t is a payment field: by its autocomplete or
// accessible name, or, for an element that holds no typed text, by its
// visible text (a label-like widget whose aria-label says otherwise).
func isPayment(t screen.Target) bool {
	if t.PaymentField() {
		return true
	}
	if t.Editable || t.Text == "" {
		return false // an editable element's text is what was typed into it
	}
	return screen.Target{Name: shortText(t)}.PaymentField()
}

func looksLikeCard(text string) bool { return screen.LooksLikeCard(text) }

// describeSaying names an element for a human, and, when its visible
// text flagged it and its accessible name says something else, what it
// shows: `the button "More info" (it shows "Buy now")`.
func describeSaying(t screen.Target, said string) string {
	label := describeTarget(t)
	if said == "text" && t.Name != "" {
		label += fmt.Sprintf(" (it shows %q)", clipText(t.Text, 60))
	}
	return label
}

// describeTarget names an element for a human: `the button "Buy now"`.
func describeTarget(t screen.Target) string {
	kind := cmpOr(t.Role, t.Tag, "element")
	name := cmpOr(t.Name, clipText(t.Text, 40))
	if name == "" {
		return "the " + kind
	}
	return fmt.Sprintf("the %s %q", kind, clipText(name, 60))
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// words is a list of control labels in several languages. Words of
// alphabetic scripts match whole words; words of scripts without spaces
// (Chinese, Japanese, Korean) match anywhere.
type words struct{ re *regexp.Regexp }

func newWords(ws ...string) words {
	var spaced, dense []string
	for _, w := range ws {
		q := strings.ReplaceAll(regexp.QuoteMeta(w), " ", `[\s\p{Z}]+`)
		if denseScript(w) {
			dense = append(dense, q)
		} else {
			spaced = append(spaced, q)
		}
	}
	pat := `(?i)(?:^|[^\p{L}\p{N}_])(?:` + strings.Join(spaced, "|") + `)(?:$|[^\p{L}\p{N}_])`
	if len(dense) > 0 {
		pat += "|" + strings.Join(dense, "|")
	}
	return words{regexp.MustCompile(pat)}
}

func denseScript(w string) bool {
	for _, r := range w {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}

// says reports whether what t says matches w, and where: "name" (its
// accessible name, which a screen reader and the page's aria-label give)
// or "text" (its visible text, which a person reads). Either one matching
// is enough, so that an aria-label cannot disguise a "Buy now" button. The
// visible text of a control (see isControl) counts whole: it is the
// control's label. Any other element's (a clickable <div>, a paragraph)
// counts when it is short, up to maxPlainText characters, so that a click
// in a paragraph that mentions paying is not a purchase.
func says(t *screen.Target, w words) (string, bool) {
	switch {
	case t.Name != "" && w.re.MatchString(t.Name):
		return "name", true
	case shortText(*t) != "" && w.re.MatchString(shortText(*t)):
		return "text", true
	}
	return "", false
}

// maxPlainText is the longest visible text of an element that is not a
// control that the word rules read.
const maxPlainText = 40

// shortText returns t's visible text as the word rules read it: whole for
// a control, and for any other element only when it is short.
func shortText(t screen.Target) string {
	if isControl(t) || utf8.RuneCountInString(t.Text) <= maxPlainText {
		return t.Text
	}
	return ""
}

// controlTags and controlRoles are the elements whose visible text is
// their label: what a hit-test calls interactive (a label stands for its
// control, which the hit-test reports instead).
var (
	controlTags  = []string{"button", "input", "select", "textarea", "summary", "option"}
	controlRoles = []string{"button", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "checkbox",
		"radio", "switch", "option", "treeitem", "gridcell", "combobox"}
)

// isControl reports whether t is a control: a link, a button, a form
// control, or an element with a widget role.
func isControl(t screen.Target) bool {
	return slices.Contains(controlTags, t.Tag) || slices.Contains(controlRoles, t.Role) || t.Href != ""
}

// acts reports whether clicking t does something: the hit-test says so
// (screen.Target.Acts), or t is a control whatever reported it.
func acts(t screen.Target) bool { return t.Acts || isControl(t) }

// submits reports whether a click on t submits its form.
func submits(t screen.Target) bool {
	return t.FormAction != "" && (t.InputType == "submit" || t.InputType == "image")
}

// endpointSays reports whether the path of the URL a form goes to says
// what w says ("/checkout/pay", "/api/placeOrder"), and returns the path.
func endpointSays(raw string, w words) (string, bool) {
	if raw == "" {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Path == "" || u.Path == "/" {
		return "", false
	}
	var b strings.Builder
	prev := ' '
	for _, r := range u.Path {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteRune(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	if !w.re.MatchString(b.String()) {
		return "", false
	}
	return clipText(u.Path, 80), true
}

var (
	purchaseWords = newWords("buy", "buy now", "purchase", "pay", "pay now", "checkout", "check out", "place order",
		"order now", "complete order", "confirm order", "complete purchase", "confirm purchase", "subscribe", "donate",
		"book now", "kaufen", "jetzt kaufen", "bezahlen", "zahlen", "bestellen", "zahlungspflichtig bestellen", "zur kasse",
		"acheter", "payer", "commander", "valider la commande", "comprar", "pagar", "finalizar compra", "realizar pedido",
		"acquista", "acquistare", "paga", "ordina", "kopen", "betalen", "afrekenen", "kup", "kupić", "zapłać",
		"купить", "оплатить", "заказать", "satın al", "öde",
		"購入", "支払", "注文", "购买", "支付", "付款", "下单", "結帳", "결제", "구매", "주문")
	deleteWords = newWords("delete", "remove", "erase", "destroy", "discard", "wipe", "purge", "deactivate",
		"close account", "cancel subscription", "revoke", "löschen", "entfernen", "supprimer", "effacer", "eliminar",
		"borrar", "elimina", "cancella", "rimuovi", "excluir", "apagar", "remover", "verwijderen", "usuń",
		"удалить", "sil", "削除", "删除", "삭제")
	sendWords = newWords("send", "submit", "post", "publish", "transfer", "confirm", "senden", "absenden", "abschicken",
		"überweisen", "bestätigen", "veröffentlichen", "envoyer", "soumettre", "publier", "confirmer", "enviar",
		"publicar", "confirmar", "invia", "inviare", "pubblica", "conferma", "verzenden", "versturen", "bevestigen",
		"wyślij", "отправить", "подтвердить", "gönder", "送信", "提交", "发送", "發送", "전송", "보내기")
)
