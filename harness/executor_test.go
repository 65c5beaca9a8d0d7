package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// page is an Inspector over a made-up page: a password field left of
// x=100, a search box right of it above y=100, a button below; and a
// focused element.
type page struct {
	focused screen.Target
	fail    bool
}

var (
	passwordField = screen.Target{Tag: "input", InputType: "password", Editable: true}
	searchBox     = screen.Target{Tag: "input", InputType: "search", Editable: true}
	button        = screen.Target{Tag: "button", Role: "button", Name: "Sign in"}
	otpField      = screen.Target{Tag: "input", Autocomplete: "one-time-code", Editable: true}
)

func (p page) HitTest(_ context.Context, at actions.Point) (screen.Target, error) {
	switch {
	case p.fail:
		return screen.Target{}, errors.New("hit-test failed")
	case at.X < 100:
		return passwordField, nil
	case at.Y < 100:
		return searchBox, nil
	}
	return button, nil
}

func (p page) Focused(context.Context) (screen.Target, error) {
	if p.fail {
		return screen.Target{}, errors.New("focus query failed")
	}
	return p.focused, nil
}

// TestPrepareDecidesSecretsBeforeTheRecord: which typed texts are secret
// is decided from the page before anything is recorded, conservatively
// where the focus cannot be foreseen.
func TestPrepareDecidesSecretsBeforeTheRecord(t *testing.T) {
	key := func(k string) actions.Action {
		return actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Key(k)}}
	}
	tests := []struct {
		name  string
		page  *page // nil: a display without a DOM
		calls [][]actions.Action
		want  [][]bool // per call, per action
	}{
		{"typing into the focused password field", &page{focused: passwordField},
			[][]actions.Action{{typing("hunter2")}}, [][]bool{{true}}},
		{"typing into a focused one-time-code field", &page{focused: otpField},
			[][]actions.Action{{typing("123456")}}, [][]bool{{true}}},
		{"typing into the focused search box", &page{focused: searchBox},
			[][]actions.Action{{typing("laptops")}}, [][]bool{{false}}},
		{"a click on the password field, then typing", &page{focused: searchBox},
			[][]actions.Action{{click(50, 50), typing("hunter2")}}, [][]bool{{false, true}}},
		{"a click on the search box, then typing", &page{focused: passwordField},
			[][]actions.Action{{click(150, 50), typing("laptops")}}, [][]bool{{false, false}}},
		{"the click and the typing in two calls of a turn", &page{focused: searchBox},
			[][]actions.Action{{click(50, 50)}, {typing("hunter2")}}, [][]bool{{false}, {true}}},
		{"a click on a button may move the focus anywhere", &page{focused: searchBox},
			[][]actions.Action{{click(150, 150), typing("hunter2")}}, [][]bool{{false, true}}},
		{"a key before the typing: the focus cannot be foreseen", &page{focused: searchBox},
			[][]actions.Action{{typing("alice"), key("Tab"), typing("hunter2")}}, [][]bool{{false, false, true}}},
		{"a second click after an effect: the page may have changed", &page{focused: searchBox},
			[][]actions.Action{{click(150, 150), click(150, 50), typing("laptops")}}, [][]bool{{false, false, true}}},
		{"a page that cannot be asked", &page{fail: true},
			[][]actions.Action{{typing("hunter2")}}, [][]bool{{true}}},
		{"a card number anywhere", &page{focused: searchBox},
			[][]actions.Action{{typing("4111 1111 1111 1111")}}, [][]bool{{true}}},
		{"no DOM: only card numbers", nil,
			[][]actions.Action{{typing("hunter2"), typing("4111111111111111")}}, [][]bool{{false, true}}},
		{"a placeholder is shown as written", &page{focused: searchBox},
			[][]actions.Action{{typing("{{PW}}")}}, [][]bool{{false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := harness.ExecutorConfig{Display: &screentest.Fake{}, Policy: permissive, Secrets: map[string]string{"PW": "s3cret-value"}}
			if tt.page != nil {
				cfg.Inspector = *tt.page
			}
			e, err := harness.NewExecutor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.Screenshot(t.Context(), harness.ActorModel); err != nil {
				t.Fatal(err)
			}
			var calls []harness.Call
			for i, b := range tt.calls {
				calls = append(calls, harness.Call{ID: string(rune('a' + i)), Actions: b})
			}
			got := e.Prepare(t.Context(), calls)
			for i, c := range got {
				for j, a := range c.Actions {
					if a.Secret != tt.want[i][j] {
						t.Errorf("call %d action %d (%s %q): secret = %v, want %v", i, j, a.Kind, a.Text, a.Secret, tt.want[i][j])
					}
				}
				for j, a := range calls[i].Actions {
					if a.Secret {
						t.Errorf("Prepare changed its input: call %d action %d", i, j)
					}
				}
			}
		})
	}
}

// TestSecretMarkTravelsToEverySink: a run that types into a password field
// shows the turn masked to OnTurn, masks the call, the action and the
// approval request, and still types the real text; a call restored with
// only the mask is refused, not typed.
func TestSecretMarkTravelsToEverySink(t *testing.T) {
	const pw = "Hunter2-Sink-Check"
	raw, _ := json.Marshal(map[string]any{"action": "type", "text": pw})
	m := &turnsModel{turns: []harness.Turn{
		{Stop: harness.StopToolUse, Text: "typing the password", Calls: []harness.Call{
			{ID: "c1", Name: "computer", Raw: raw, Actions: []actions.Action{click(50, 50), typing(pw)}}}},
	}}
	d := &screentest.Fake{}
	var turns []harness.Turn
	var asked []harness.ApprovalRequest
	var seen []string
	deny := harness.ApproverFunc(func(_ context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		asked = append(asked, r)
		return harness.Decision{}, nil
	})
	cfg := harness.Config{Model: m, Display: d, Policy: permissive, Approver: deny, Inspector: page{focused: searchBox},
		OnTurn:  func(t harness.Turn, _ harness.Redactor) { turns = append(turns, t) },
		OnEvent: func(e trace.Event) { b, _ := json.Marshal(e); seen = append(seen, string(b)) }}
	if _, err := harness.Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if p := d.Performed(); len(p) != 2 || p[1].Text != pw {
		t.Fatalf("the display did not get the real text: %+v", p)
	}
	if len(turns) != 2 || !turns[0].Calls[0].Actions[1].Secret || turns[0].Calls[0].Actions[1].Text != actions.SecretMask ||
		strings.Contains(string(turns[0].Calls[0].Raw), pw) {
		t.Errorf("OnTurn saw %+v, want the typing masked", turns)
	}
	if len(asked) != 2 || !asked[1].Action.Secret {
		t.Errorf("the approver was asked %+v, want the typing marked secret", asked)
	}
	for _, e := range seen {
		if strings.Contains(e, pw) {
			t.Errorf("event leaks the password: %s", e)
		}
	}

	// After a restart the saved turn holds only the mask: it is not typed.
	d = &screentest.Fake{}
	restored := harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "c1", Name: "computer",
		Actions: []actions.Action{{Kind: actions.Type, Text: actions.SecretMask, Secret: true}}}}}
	m = &turnsModel{}
	if _, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive,
		Resume: &harness.Resume{Step: 1, Turn: restored}}); err != nil {
		t.Fatal(err)
	}
	if len(d.Performed()) != 0 {
		t.Errorf("a masked secret was typed: %+v", d.Performed())
	}
	if r := m.got[0].Results[0]; r.Err == nil || !strings.Contains(r.Err.Error(), "send the action again") {
		t.Errorf("result = %v, want the model told to send it again", r.Err)
	}
}

// TestOperatorSkipsApprovalsNotThePolicy: the operator is the human, so
// the Approver is not asked; the Policy still refuses.
func TestOperatorSkipsApprovalsNotThePolicy(t *testing.T) {
	asked := 0
	never := harness.ApproverFunc(func(context.Context, harness.ApprovalRequest) (harness.Decision, error) {
		asked++
		return harness.Decision{}, errors.New("no")
	})
	policy := actions.Standard()
	policy.Hosts = []string{"shop.example"}
	d := &screentest.Fake{}
	e, err := harness.NewExecutor(harness.ExecutorConfig{Display: d, Policy: policy, Approver: never})
	if err != nil {
		t.Fatal(err)
	}
	nav := func(u string) harness.Call {
		return harness.Call{ID: "op", Actions: []actions.Action{{Kind: actions.Navigate, URL: u}}}
	}
	if r := e.Do(t.Context(), nav("https://shop.example/a"), harness.Options{Actor: harness.ActorOperator}); r.Err != nil {
		t.Errorf("operator's allowed navigation: %v", r.Err)
	}
	r := e.Do(t.Context(), nav("https://evil.example/"), harness.Options{Actor: harness.ActorOperator})
	if !errors.Is(r.Err, actions.ErrNotAllowed) {
		t.Errorf("operator's navigation off the allowlist: %v, want ErrNotAllowed", r.Err)
	}
	if r := e.Do(t.Context(), nav("https://shop.example/b"), harness.Options{Actor: harness.ActorModel}); r.Err == nil {
		t.Error("the model's call ran without the approver's yes")
	}
	if asked != 1 {
		t.Errorf("approver asked %d times, want once (the model's call only)", asked)
	}
	if n := len(d.Performed()); n != 1 {
		t.Errorf("performed %d actions, want 1", n)
	}
}

// focusAfter is a page whose focus moves when clicked: Focused answers
// what the last click reached, which HitTest does not foresee.
type focusAfter struct {
	page
	then screen.Target
}

func (f *focusAfter) Focused(context.Context) (screen.Target, error) { return f.then, nil }

// A text Prepare could not place is recorded masked; its value joins the
// redacted secrets only when it is typed into a secret field, so that a
// search term stays in what the model is sent.
func TestUnsureTextIsMaskedButRedactedOnlyWhenSecret(t *testing.T) {
	for _, tt := range []struct {
		name   string
		then   screen.Target
		redact bool
	}{
		{"it went into a search box", searchBox, false},
		{"it went into a password field", passwordField, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const text = "laptops-or-password"
			in := &focusAfter{then: tt.then}
			var seen []string
			e, err := harness.NewExecutor(harness.ExecutorConfig{Display: &screentest.Fake{}, Policy: permissive, Inspector: in,
				OnEvent: func(ev trace.Event) { b, _ := json.Marshal(ev); seen = append(seen, string(b)) }})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.Screenshot(t.Context(), harness.ActorModel); err != nil {
				t.Fatal(err)
			}
			// A click on a button (it opens something), then typing.
			c := harness.Call{ID: "c1", Actions: []actions.Action{click(150, 150), typing(text)}}
			if r := e.Do(t.Context(), c, harness.Options{}); r.Err != nil {
				t.Fatal(r.Err)
			}
			for _, s := range seen {
				if strings.Contains(s, text) {
					t.Errorf("an unsure text was recorded: %s", s)
				}
			}
			red := e.Redactor()
			if got := red.String(text) != text; got != tt.redact {
				t.Errorf("redacted from then on = %v, want %v", got, tt.redact)
			}
		})
	}
}

// An executor keeps the newest MaxFrames frames: a call may name any of
// them, and one naming an older screenshot is told so instead of being
// mapped with a geometry nobody keeps any more.
func TestExecutorKeepsTheNewestFrames(t *testing.T) {
	d := &screentest.Fake{Viewport: screen.Size{W: 64, H: 40}} // small: 266 captures (22 s at 1280x800 under -race)
	e, err := harness.NewExecutor(harness.ExecutorConfig{Display: d, Policy: permissive})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range harness.MaxFrames + 10 {
		shot, _, err := e.Screenshot(t.Context(), harness.ActorClient)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, shot.Frame.ID)
	}
	click := func(frame string) harness.Call {
		return harness.Call{ID: "c-" + frame, FrameID: frame,
			Actions: []actions.Action{{Kind: actions.Click, At: actions.Pt(5, 5), HasAt: true}}}
	}
	if r := e.Do(t.Context(), click(ids[0]), harness.Options{Actor: harness.ActorClient}); !errors.Is(r.Err, harness.ErrUnknownFrame) ||
		!strings.Contains(r.Err.Error(), "newest") {
		t.Errorf("a call naming the first of %d screenshots: %v, want ErrUnknownFrame that says why", len(ids), r.Err)
	}
	if r := e.Do(t.Context(), click(ids[len(ids)-harness.MaxFrames+1]), harness.Options{Actor: harness.ActorClient}); r.Err != nil {
		t.Errorf("a call naming a kept screenshot: %v", r.Err)
	}
}
