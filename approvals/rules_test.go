package approvals

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// testFrame is a 1280x800 viewport sent to the model at 640x400.
var testFrame = screen.Frame{ID: "f1", URL: "https://shop.example/cart", Viewport: screen.Size{W: 1280, H: 800}, DPR: 1,
	Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Capture: screen.Size{W: 1280, H: 800}, Sent: screen.Size{W: 640, H: 400},
	Format: screen.PNG}

func click(x, y float64) actions.Action {
	return actions.Action{Kind: actions.Click, At: actions.Pt(x, y), HasAt: true}
}

func keypress(t *testing.T, s string) actions.Action {
	t.Helper()
	c, err := actions.ParseChord(s)
	if err != nil {
		t.Fatalf("ParseChord(%q) = %v", s, err)
	}
	return actions.Action{Kind: actions.Keypress, Keys: c}
}

// subject makes the Subject of a in testFrame, with target t (nil: none)
// on a display with a DOM.
func subject(t *testing.T, a actions.Action, tg *screen.Target) Subject {
	t.Helper()
	s := Subject{Action: a, Frame: testFrame, DOM: true, Target: tg, DialogKnown: true, PolicyHosts: []string{"*.shop.example"}}
	if a.Kind.IsPointer() {
		m, err := testFrame.Map(a, screen.Image)
		if err != nil {
			t.Fatalf("Map(%v) = %v", a.LogValue(), err)
		}
		s.Mapped = &m
		if m.HasAt {
			s.Points = []actions.Point{testFrame.FromCSS(m.At)}
		}
	}
	return s
}

func rulesOf(fs []Finding) []string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Rule)
	}
	return names
}

func TestDefaultRules(t *testing.T) {
	button := func(name string) *screen.Target { return &screen.Target{Tag: "button", Role: "button", Name: name} }
	field := func(typ, ac, name string) *screen.Target {
		return &screen.Target{Tag: "input", Role: "textbox", InputType: typ, Autocomplete: ac, Name: name, Editable: true}
	}
	tests := []struct {
		name   string
		a      actions.Action
		target *screen.Target
		dialog *screen.Dialog
		index  int
		want   []string // rule names; nil: not flagged
	}{
		{name: "safety check", index: -1, want: []string{RuleSafetyCheck}},
		{name: "buy button", a: click(10, 10), target: button("Buy now"), want: []string{RulePurchase}},
		{name: "checkout link", a: click(10, 10), target: &screen.Target{Tag: "a", Role: "link", Name: "Proceed to checkout", Href: "https://shop.example/checkout"}, want: []string{RulePurchase}},
		{name: "German order button", a: click(10, 10), target: button("Zahlungspflichtig bestellen"), want: []string{RulePurchase}},
		{name: "Japanese purchase button", a: click(10, 10), target: button("今すぐ購入"), want: []string{RulePurchase}},
		{name: "clickable div without a name", a: click(10, 10), target: &screen.Target{Tag: "div", Text: "Pay", Acts: true}, want: []string{RulePurchase}},
		{name: "submit to a purchase endpoint", a: click(10, 10), target: &screen.Target{Tag: "button", Role: "button", InputType: "submit",
			Name: "Continue", Text: "Continue", FormAction: "https://shop.example/checkout/pay", FormMethod: "post", Acts: true}, want: []string{RulePurchase}},
		{name: "submit to a camel-case order endpoint", a: click(10, 10), target: &screen.Target{Tag: "input", Role: "button", InputType: "submit",
			Name: "Next", FormAction: "https://shop.example/api/placeOrder", FormMethod: "post", Acts: true}, want: []string{RulePurchase}},
		{name: "submit to a delete endpoint", a: click(10, 10), target: &screen.Target{Tag: "button", Role: "button", InputType: "submit",
			Name: "OK", FormAction: "https://shop.example/account/delete", FormMethod: "post", Acts: true}, want: []string{RuleDelete}},
		{name: "Enter submits a form whose button buys", a: keypress(t, "Enter"), target: &screen.Target{Tag: "input", Role: "spinbutton",
			InputType: "number", Name: "Quantity", Editable: true, FormAction: "https://shop.example/cart", FormMethod: "post",
			FormSubmit: "Place order", Acts: true}, want: []string{RulePurchase}},
		{name: "a typed newline submits a form to a pay endpoint", a: actions.Action{Kind: actions.Type, Text: "2\n"}, target: &screen.Target{
			Tag: "input", Role: "textbox", InputType: "text", Name: "Seats", Editable: true, FormAction: "https://shop.example/pay",
			FormMethod: "post", FormSubmit: "Next", Acts: true}, want: []string{RulePurchase}},
		{name: "delete button", a: click(10, 10), target: button("Delete account"), want: []string{RuleDelete}},
		{name: "French delete", a: click(10, 10), target: button("Supprimer"), want: []string{RuleDelete}},
		{name: "send button", a: click(10, 10), target: button("Send"), want: []string{RuleSend}},
		{name: "Spanish send", a: click(10, 10), target: button("Enviar mensaje"), want: []string{RuleSend}},
		{name: "submit input", a: click(10, 10), target: &screen.Target{Tag: "input", Role: "button", InputType: "submit", Name: "Submit"}, want: []string{RuleSend}},
		{name: "mouse down on buy", a: actions.Action{Kind: actions.MouseDown, At: actions.Pt(1, 1), HasAt: true}, target: button("Buy"), want: []string{RulePurchase}},
		{name: "typing a password", a: actions.Action{Kind: actions.Type, Text: "hunter2"}, target: field("password", "", "Password"), want: []string{RulePassword}},
		{name: "typing into current-password", a: actions.Action{Kind: actions.Type, Text: "x"}, target: field("text", "current-password", "PIN"), want: []string{RulePassword}},
		{name: "Enter in a password field", a: keypress(t, "Return"), target: field("password", "", "Password"), want: []string{RulePassword}},
		{name: "typing a card number field", a: actions.Action{Kind: actions.Type, Text: "4"}, target: field("text", "cc-number", "Number"), want: []string{RulePayment}},
		{name: "typing a CVV field by name", a: actions.Action{Kind: actions.Type, Text: "123"}, target: field("text", "", "CVV"), want: []string{RulePayment}},
		{name: "unlabelled cardnumber", a: actions.Action{Kind: actions.Type, Text: "1"}, target: field("text", "", "cardnumber"), want: []string{RulePayment}},
		{name: "Enter in a payment field", a: keypress(t, "enter"), target: field("text", "billing cc-csc", "Security code"), want: []string{RulePayment}},
		{name: "typing a card number anywhere", a: actions.Action{Kind: actions.Type, Text: "4111 1111 1111 1111"}, want: []string{RulePayment}},
		{name: "external link", a: click(10, 10), target: &screen.Target{Tag: "a", Role: "link", Name: "Partner", Href: "https://evil.example/x"}, want: []string{RuleOutside}},
		{name: "middle-click external link", a: actions.Action{Kind: actions.Click, At: actions.Pt(1, 1), HasAt: true, Button: actions.Middle}, target: &screen.Target{Tag: "a", Href: "http://evil.example/"}, want: []string{RuleOutside}},
		{name: "form posting outside", a: click(10, 10), target: &screen.Target{Tag: "input", InputType: "submit", Name: "Go", FormAction: "https://collector.example/", FormMethod: "post"}, want: []string{RuleOutside}},
		{name: "navigate outside", a: actions.Action{Kind: actions.Navigate, URL: "https://evil.example/"}, want: []string{RuleOutside}},
		{name: "download link", a: click(10, 10), target: &screen.Target{Tag: "a", Role: "link", Name: "Report", Href: "https://shop.example/r.pdf", Download: true}, want: []string{RuleDownload}},
		{name: "file input", a: click(10, 10), target: &screen.Target{Tag: "input", InputType: "file", Name: "Attach"}, want: []string{RuleFilePicker}},
		{name: "upload", a: actions.Action{Kind: actions.Upload, Files: []string{"a.txt"}}, want: []string{RuleFilePicker}},
		{name: "ctrl+w", a: keypress(t, "ctrl+w"), want: []string{RuleCloseChord}},
		{name: "alt+F4", a: keypress(t, "alt+F4"), want: []string{RuleCloseChord}},
		{name: "cmd+q", a: keypress(t, "cmd+q"), want: []string{RuleCloseChord}},
		{name: "close tab", a: actions.Action{Kind: actions.CloseTab, Tab: 1}, want: []string{RuleCloseChord}},
		{name: "accept beforeunload", a: actions.Action{Kind: actions.Dialog, Accept: true}, dialog: &screen.Dialog{Type: "beforeunload"}, want: []string{RuleLeavePage}},

		// Benign actions.
		{name: "plain button", a: click(10, 10), target: button("Show details")},
		{name: "word inside a word", a: click(10, 10), target: button("Repay history")},
		{name: "long paragraph mentioning pay", a: click(10, 10), target: &screen.Target{Tag: "p", Text: "You can pay later; this paragraph is long enough to be text."}},
		{name: "static thanks for a purchase", a: click(10, 10), target: &screen.Target{Tag: "h1", Role: "heading", Name: "Thank you for your purchase!", Text: "Thank you for your purchase!"}},
		{name: "static text saying buy now", a: click(10, 10), target: &screen.Target{Tag: "span", Text: "Buy now"}},
		{name: "a label with no control", a: click(10, 10), target: &screen.Target{Tag: "label", Text: "Delete"}},
		{name: "a button that does not submit, in a checkout form", a: click(10, 10), target: &screen.Target{Tag: "button", Role: "button",
			InputType: "button", Name: "Show terms", FormAction: "https://shop.example/checkout/pay", FormMethod: "post", Acts: true}},
		{name: "Enter in a search form", a: keypress(t, "Enter"), target: &screen.Target{Tag: "input", Role: "searchbox", InputType: "search",
			Name: "Search", Editable: true, FormAction: "https://shop.example/search", FormSubmit: "Search", Acts: true}},
		{name: "typing without a newline in a checkout form", a: actions.Action{Kind: actions.Type, Text: "2"}, target: &screen.Target{
			Tag: "input", Role: "textbox", InputType: "text", Name: "Seats", Editable: true, FormAction: "https://shop.example/pay",
			FormSubmit: "Pay now", Acts: true}},
		{name: "right-click on buy", a: actions.Action{Kind: actions.Click, At: actions.Pt(1, 1), HasAt: true, Button: actions.Right}, target: button("Buy")},
		{name: "typing a search", a: actions.Action{Kind: actions.Type, Text: "blue shoes"}, target: field("search", "", "Search")},
		{name: "Enter in a search field", a: keypress(t, "Enter"), target: field("search", "", "Search")},
		{name: "digits that fail Luhn", a: actions.Action{Kind: actions.Type, Text: "4111 1111 1111 1112"}},
		{name: "same-origin link", a: click(10, 10), target: &screen.Target{Tag: "a", Href: "https://shop.example/other"}},
		{name: "link to a policy host", a: click(10, 10), target: &screen.Target{Tag: "a", Href: "https://cdn.shop.example/x"}},
		{name: "javascript link", a: click(10, 10), target: &screen.Target{Tag: "a", Href: "javascript:void(0)"}},
		{name: "navigate to a policy host", a: actions.Action{Kind: actions.Navigate, URL: "https://www.shop.example/"}},
		{name: "scroll", a: actions.Action{Kind: actions.Scroll, At: actions.Pt(1, 1), HasAt: true, DeltaY: 10}},
		{name: "ctrl+c", a: keypress(t, "ctrl+c")},
		{name: "accept an alert", a: actions.Action{Kind: actions.Dialog, Accept: true}, dialog: &screen.Dialog{Type: "alert"}},
		{name: "dismiss beforeunload", a: actions.Action{Kind: actions.Dialog}, dialog: &screen.Dialog{Type: "beforeunload"}},
		{name: "screenshot", a: actions.Action{Kind: actions.Screenshot}},
	}
	r := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := subject(t, tt.a, tt.target)
			s.Index, s.Dialog = tt.index, tt.dialog
			got := r.Evaluate(s)
			if diff := cmp.Diff(tt.want, rulesOf(got)); diff != "" {
				t.Errorf("Evaluate(%s) rules (-want +got):\n%s", tt.name, diff)
			}
			for _, f := range got {
				if f.Reason == "" {
					t.Errorf("Evaluate(%s): rule %s has no reason", tt.name, f.Rule)
				}
			}
		})
	}
}

func TestReasonsNameTheElement(t *testing.T) {
	got := Default().Evaluate(subject(t, click(1, 1), &screen.Target{Tag: "button", Role: "button", Name: "Buy now"}))
	want := []Finding{{Rule: RulePurchase, Reason: `clicking the button "Buy now" may spend money`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Evaluate(click on Buy now) (-want +got):\n%s", diff)
	}
}

func TestNoDOMFallback(t *testing.T) {
	r, err := Parse([]byte(`
regions:
  - {name: taskbar, reason: the desktop's taskbar, x: 0, y: 380, w: 640, h: 20}
keys: ["super"]
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		a    actions.Action
		want []string
	}{
		{"click in a region", click(100, 390), []string{"taskbar"}},
		{"click elsewhere", click(100, 100), nil},
		{"typing without a target", actions.Action{Kind: actions.Type, Text: "hunter2"}, nil},
		{"typing a card number", actions.Action{Kind: actions.Type, Text: "5555-5555-5555-4444"}, []string{RulePayment}},
		{"close chord", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Alt, "F4"}}, []string{RuleCloseChord}},
		{"configured key", actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Meta}}, []string{"keys"}},
		{"navigate outside", actions.Action{Kind: actions.Navigate, URL: "https://evil.example/"}, []string{RuleOutside}},
		{"dialog accept, dialogs unknown", actions.Action{Kind: actions.Dialog, Accept: true}, []string{RuleLeavePage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := subject(t, tt.a, nil)
			s.DOM, s.DialogKnown = false, false
			if diff := cmp.Diff(tt.want, rulesOf(r.Evaluate(s))); diff != "" {
				t.Errorf("Evaluate(%s) without a DOM (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestSuperviseModes(t *testing.T) {
	benign := subject(t, click(1, 1), &screen.Target{Tag: "div"})
	buy := subject(t, click(1, 1), &screen.Target{Tag: "button", Name: "Buy"})
	shot := subject(t, actions.Action{Kind: actions.Screenshot}, nil)
	safety := Subject{Index: -1, Frame: testFrame}
	tests := []struct {
		mode Supervise
		s    Subject
		want []string
	}{
		{SuperviseAll, benign, []string{RuleSuperviseAll}},
		{SuperviseAll, buy, []string{RulePurchase}},
		{SuperviseAll, shot, nil},
		{SuperviseNone, buy, nil},
		{SuperviseNone, safety, []string{RuleSafetyCheck}},
		{SuperviseFlagged, benign, nil},
	}
	for _, tt := range tests {
		r := Rules{Supervise: tt.mode}
		if diff := cmp.Diff(tt.want, rulesOf(r.Evaluate(tt.s))); diff != "" {
			t.Errorf("Evaluate(%s) with supervise %s (-want +got):\n%s", tt.s.Action.Kind, tt.mode, diff)
		}
	}
}

func TestCustomRulesAndDisable(t *testing.T) {
	r, err := Parse([]byte(`
supervise: flagged
hosts: ["partner.example"]
disable: [send]
rules:
  - name: transfer-form
    reason: typing into the bank transfer form
    kinds: [type]
    url: ["^https://shop\\.example/"]
    target:
      name: ["amount|recipient"]
      editable: true
  - name: save
    reason: saving changes the document
    keys: ["ctrl+s"]
`))
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	field := &screen.Target{Tag: "input", Name: "Recipient", Editable: true}
	tests := []struct {
		name string
		s    Subject
		want []string
	}{
		{"custom target rule", subject(t, actions.Action{Kind: actions.Type, Text: "x"}, field), []string{"transfer-form"}},
		{"custom rule needs a DOM", subject(t, actions.Action{Kind: actions.Type, Text: "x"}, nil), nil},
		{"custom keys", subject(t, keypress(t, "Control+S"), nil), []string{"save"}},
		{"disabled built-in", subject(t, click(1, 1), &screen.Target{Tag: "button", Name: "Send"}), nil},
		{"extra host", subject(t, click(1, 1), &screen.Target{Tag: "a", Href: "https://partner.example/"}), nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, rulesOf(r.Evaluate(tt.s))); diff != "" {
			t.Errorf("Evaluate(%s) (-want +got):\n%s", tt.name, diff)
		}
	}
	iban := &screen.Target{Tag: "input", Name: "Recipient IBAN", Editable: true}
	if got := rulesOf(Default().Evaluate(subject(t, actions.Action{Kind: actions.Type, Text: "x"}, iban))); !cmp.Equal(got, []string{RulePayment}) {
		t.Errorf("Default().Evaluate(typing into an IBAN field) = %v, want [payment]", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "superviser: all", "superviser (line 1): unknown field; the fields here are disable, hosts"},
		{"bad supervise", "supervise: some", `supervise "some": want all, flagged or none`},
		{"negative timeout", "timeout: -1s", "negative"},
		{"bad timeout", "timeout: soon", `timeout (line 1): want a duration such as 90s, 5m or 1h30m, got "soon"`},
		{"absurd timeout", "timeout: 87600h", "longer than 24h0m0s"},
		{"a Go type nowhere", "rules: [{name: r, reason: why, kinds: click}]", `rules[0].kinds (line 1): want a list, got "click"`},
		{"unknown field in a rule", "rules: [{name: r, reason: why, target: {txt: buy}}]", "rules[0].target.txt (line 1): unknown field"},
		{"bad host", `hosts: ["http://x.example/"]`, "host pattern"},
		{"zone in a host", `hosts: ["[::1%eth0]"]`, "has a zone"},
		{"host with wildcard port", `hosts: ["*:*"]`, `host pattern "*:*"`},
		{"unknown rule", "disable: [purchases]", `unknown rule "purchases"`},
		{"safety check", "disable: [safety-check]", "cannot be disabled"},
		{"bad key", `keys: ["ctrl+nokey"]`, "nokey"},
		{"region without name", "regions: [{x: 0, y: 0, w: 1, h: 1}]", "name is required"},
		{"empty region", "regions: [{name: r, x: 0, y: 0, w: 0, h: 1}]", "w, h > 0"},
		{"rule without reason", "rules: [{name: r, kinds: [click]}]", "reason is required"},
		{"rule without condition", "rules: [{name: r, reason: why}]", "at least one condition"},
		{"bad regexp", "rules: [{name: r, reason: why, target: {name: ['(']}}]", "target.name[0]"},
		{"unknown kind", "rules: [{name: r, reason: why, kinds: [clack]}]", "clack"},
		{"duplicate name", "rules: [{name: purchase, reason: why, kinds: [click]}]", "already used"},
		{"two documents", "supervise: all\n---\nsupervise: none", "one YAML document"},
		{"not a map", "[1, 2]", "want a mapping of fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", tt.yaml, err, tt.want)
			}
		})
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	r, err := Parse(nil)
	if err != nil {
		t.Fatalf("Parse(nil) = %v", err)
	}
	if diff := cmp.Diff(Default(), r); diff != "" {
		t.Errorf("Parse(nil) (-want +got):\n%s", diff)
	}
}

func TestExampleFile(t *testing.T) {
	r, err := Load("../examples/rules/approvals.yaml")
	if err != nil {
		t.Fatalf("Load(examples/rules/approvals.yaml) = %v", err)
	}
	if r.Supervise != SuperviseFlagged || len(r.Rules) == 0 || len(r.Regions) == 0 {
		t.Errorf("Load(examples/rules/approvals.yaml) = %+v, want flagged supervision with rules and regions", r)
	}
	if _, err := Load("testdata/missing.yaml"); !os.IsNotExist(err) {
		t.Errorf("Load(missing) = %v, want a not-exist error", err)
	}
}

func TestInvalidRulesFlagEverything(t *testing.T) {
	r := Rules{Supervise: "sometimes"}
	got := r.Evaluate(subject(t, actions.Action{Kind: actions.Screenshot}, nil))
	if len(got) != 1 || got[0].Rule != "invalid-rules" {
		t.Errorf("Evaluate() with invalid rules = %v, want one invalid-rules finding", got)
	}
}

// FuzzParse checks that no rules file makes Parse panic, and that whatever
// it accepts evaluates without panicking.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../examples/rules/approvals.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("supervise: all\nregions: [{name: r, x: 0, y: 0, w: 1, h: 1}]"))
	f.Add([]byte("rules: [{name: r, reason: why, target: {name: ['a|b'], download: true}}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		tg := &screen.Target{Tag: "a", Name: "Buy", Href: "https://x.example/"}
		for _, a := range []actions.Action{click(1, 1), {Kind: actions.Type, Text: "x"}, {Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "w"}}} {
			s := Subject{Action: a, Frame: testFrame, DOM: true, Target: tg, Points: []actions.Point{{X: 1, Y: 1}}}
			_ = r.Evaluate(s)
		}
	})
}

// The word rules read what a person sees as well as what a screen reader
// hears: the visible text and the accessible name, either one flagging the
// click. An aria-label cannot disguise a "Buy now" button.
func TestRulesReadVisibleTextAndName(t *testing.T) {
	el := func(tag, role, name, text string) *screen.Target {
		return &screen.Target{Tag: tag, Role: role, Name: name, Text: text}
	}
	long := "Our finest leather shoes, stitched by hand in Porto: buy now" // over 40 characters
	tests := []struct {
		name   string
		a      actions.Action
		target *screen.Target
		want   []string
		reason string // a substring of the first finding's reason
	}{
		{name: "aria-label disguises a buy button", a: click(1, 1), target: el("button", "button", "More information", "Buy now"),
			want: []string{RulePurchase}, reason: `the button "More information" (it shows "Buy now")`},
		{name: "aria-label disguises a delete link", a: click(1, 1),
			target: &screen.Target{Tag: "a", Role: "link", Name: "Read more", Text: "Delete my account", Href: "https://shop.example/a"},
			want:   []string{RuleDelete}, reason: `it shows "Delete my account"`},
		{name: "aria-label disguises a send button", a: click(1, 1), target: el("button", "button", "Next", "Send message"),
			want: []string{RuleSend}},
		{name: "name says buy, text does not", a: click(1, 1), target: el("button", "button", "Buy now", "→"),
			want: []string{RulePurchase}, reason: `the button "Buy now" may`},
		{name: "long text of a control counts whole", a: click(1, 1), target: el("button", "button", "Details", long),
			want: []string{RulePurchase}},
		{name: "long text of a widget role counts whole", a: click(1, 1), target: el("div", "menuitem", "Details", long),
			want: []string{RulePurchase}},
		{name: "short text of a clickable div with a name", a: click(1, 1), target: &screen.Target{Tag: "div", Name: "Info", Text: "Pay", Acts: true},
			want: []string{RulePurchase}},
		{name: "German text under an English label", a: click(1, 1), target: el("button", "button", "Continue", "Jetzt kaufen"),
			want: []string{RulePurchase}},
		{name: "purchase wins over send", a: click(1, 1), target: el("button", "button", "Send", "Buy"),
			want: []string{RulePurchase}},
		{name: "disguised link outside", a: click(1, 1),
			target: &screen.Target{Tag: "a", Role: "link", Name: "Home", Text: "Home", Href: "https://evil.example/"},
			want:   []string{RuleOutside}},
		{name: "Enter on a non-field showing card number", a: keypress(t, "Enter"), target: el("div", "group", "Notes", "Card number"),
			want: []string{RulePayment}},

		// Not flagged.
		{name: "long text of a plain element", a: click(1, 1), target: el("div", "", "Product card", long)},
		{name: "short static text with a name", a: click(1, 1), target: el("div", "", "Info", "Pay")},
		{name: "harmless name and text", a: click(1, 1), target: el("button", "button", "More information", "Details")},
		{name: "right-click on a disguised buy button", a: actions.Action{Kind: actions.Click, At: actions.Pt(1, 1), HasAt: true, Button: actions.Right},
			target: el("button", "button", "More information", "Buy now")},
		{name: "typed text that mentions a card number", a: actions.Action{Kind: actions.Type, Text: "x"},
			target: &screen.Target{Tag: "div", Role: "textbox", Name: "Notes", Text: "my card number is on file", Editable: true}},
	}
	r := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Evaluate(subject(t, tt.a, tt.target))
			if diff := cmp.Diff(tt.want, rulesOf(got)); diff != "" {
				t.Fatalf("Evaluate(%+v) rules (-want +got):\n%s", *tt.target, diff)
			}
			if tt.reason != "" && !strings.Contains(got[0].Reason, tt.reason) {
				t.Errorf("Evaluate(%+v) reason = %q, want it to contain %q", *tt.target, got[0].Reason, tt.reason)
			}
		})
	}
}

// An operator's rule that matches what an element says (target.name or
// target.text) reads both its accessible name and its visible text; a url
// condition reads the page's URL and where the action's link or form
// leads.
func TestCustomRulesReadVisibleTextAndLinks(t *testing.T) {
	r, err := Parse([]byte(`
hosts: ["bank.example"]
disable: [send]
rules:
  - name: transfer
    reason: starting a transfer
    kinds: [click]
    target:
      name: ["transfer"]
  - name: wire
    reason: a wire
    target:
      text: ["^wire$"]
  - name: bank
    reason: going to the bank's transfer page
    url: ["^https://bank\\.example/transfer"]
    kinds: [click, keypress, navigate]
`))
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	link := func(name, href string) *screen.Target {
		return &screen.Target{Tag: "a", Role: "link", Name: name, Text: name, Href: href}
	}
	tests := []struct {
		name   string
		a      actions.Action
		target *screen.Target
		want   []string
	}{
		{"name pattern matches the visible text", click(1, 1), &screen.Target{Tag: "button", Name: "Next", Text: "Transfer 500 EUR"}, []string{"transfer"}},
		{"name pattern matches the name", click(1, 1), &screen.Target{Tag: "button", Name: "Start transfer"}, []string{"transfer"}},
		{"text pattern matches the name", click(1, 1), &screen.Target{Tag: "button", Name: "Wire", Text: "→"}, []string{"wire"}},
		{"text pattern matches the text", click(1, 1), &screen.Target{Tag: "button", Name: "Go", Text: "Wire"}, []string{"wire"}},
		{"neither says it", click(1, 1), &screen.Target{Tag: "button", Name: "Next", Text: "Continue"}, nil},
		{"text pattern and static text", click(1, 1), &screen.Target{Tag: "p", Text: "Wire"}, nil},
		{"text pattern and an element with a handler", click(1, 1), &screen.Target{Tag: "p", Text: "Wire", Acts: true}, []string{"wire"}},
		{"url matches a link's target", click(1, 1), link("Your account", "https://bank.example/transfer/new"), []string{"bank"}},
		{"url matches a focused link's target on Enter", keypress(t, "Enter"), link("Your account", "https://bank.example/transfer"), []string{"bank"}},
		{"url matches a form's action", click(1, 1), &screen.Target{Tag: "input", InputType: "submit", Name: "Go",
			FormAction: "https://bank.example/transfer"}, []string{"bank"}},
		{"url and a link elsewhere", click(1, 1), link("Help", "https://bank.example/help"), nil},
		{"url and a right-click on the link", actions.Action{Kind: actions.Click, At: actions.Pt(1, 1), HasAt: true, Button: actions.Right},
			link("Your account", "https://bank.example/transfer"), nil},
		{"url and a navigate", actions.Action{Kind: actions.Navigate, URL: "https://bank.example/transfer"}, nil, []string{"bank"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, rulesOf(r.Evaluate(subject(t, tt.a, tt.target)))); diff != "" {
				t.Errorf("Evaluate(%s) (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}
