package qa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
)

// Target names the element a scripted pointer action acts on, instead of
// its coordinates: {type: click, target: {text: "Check in"}}, or
// {type: click, target: {role: button, name: "Check in"}}, or the short
// form {type: click, target: "Check in"} (visible text).
//
// Before the script's turn goes to the loop, the target is looked up on the
// page as it is then, in an isolated world of the display (cdp.Display.Eval:
// the page's own scripts cannot change the answer), and the action gets
// the point in the screenshot's pixels where a hit-test at the element's
// centre (or, if something covers the centre, another point of it) finds
// the element itself. The action then runs like any other: validation, the
// policy, the approval rules, mapping with the frame. A target that matches
// no visible element, or several without nth, or lies outside the viewport
// or under another element, is the call's error, and a strict script ends
// the run with it.
type Target struct {
	// Text is the element's visible text (innerText; a button input's
	// value), whitespace collapsed and compared without regard to case: a
	// match of the whole text wins over elements that contain it, and of
	// those only the innermost count. Exact requires the whole text, with
	// case.
	Text string `json:"text,omitempty"`
	// Role is the element's ARIA role, given (role="...") or implied by its
	// tag (button, link, textbox, checkbox, radio, combobox, heading, ...).
	Role string `json:"role,omitempty"`
	// Name is its accessible name, with Role: aria-label, aria-labelledby,
	// a label, a button's text or value, a field's placeholder, title or
	// alt. Compared as Text is.
	Name  string `json:"name,omitempty"`
	Exact bool   `json:"exact,omitempty"`
	// Nth picks one of several matches, from 0 in document order. Without
	// it, a target must match exactly one element.
	Nth *int `json:"nth,omitempty"`
}

// targetKinds are the action types that may name a target: those with one
// point.
var targetKinds = []string{"click", "double_click", "triple_click", "move", "scroll", "mouse_down", "mouse_up"}

// UnmarshalJSON reads a target object, or a string of visible text.
func (t *Target) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = Target{Text: s}
		return t.check()
	}
	type plain Target
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("want visible text or {text, role, name, exact, nth}: %v", err)
	}
	*t = Target(p)
	return t.check()
}

func (t Target) check() error {
	switch {
	case t.Name != "" && t.Role == "":
		return errors.New("name goes with role: the accessible name of an element of that role")
	case strings.TrimSpace(t.Text) == "" && strings.TrimSpace(t.Role) == "":
		return errors.New("name the element's visible text or its role")
	case t.Nth != nil && *t.Nth < 0:
		return fmt.Errorf("nth %d: count from 0", *t.Nth)
	}
	return nil
}

// String describes the target for messages.
func (t Target) String() string {
	var parts []string
	if t.Role != "" {
		parts = append(parts, "role "+t.Role)
	}
	if t.Name != "" {
		parts = append(parts, fmt.Sprintf("name %q", t.Name))
	}
	if t.Text != "" {
		parts = append(parts, fmt.Sprintf("text %q", t.Text))
	}
	if t.Exact {
		parts = append(parts, "exact")
	}
	if t.Nth != nil {
		parts = append(parts, fmt.Sprintf("nth %d", *t.Nth))
	}
	return strings.Join(parts, ", ")
}

// scriptTargets checks the targets in a script's turns and reports whether
// there are any. Errors name the turn and the action.
func scriptTargets(turns []script.Turn) (bool, error) {
	found := false
	for i, turn := range turns {
		names, batches := []string{"actions"}, []script.Batch{turn.Actions}
		for j, c := range turn.Calls {
			names, batches = append(names, fmt.Sprintf("calls[%d]", j)), append(batches, c)
		}
		for bi, b := range batches {
			name := names[bi]
			if len(b) == 0 {
				continue
			}
			var items []map[string]json.RawMessage
			if json.Unmarshal(b, &items) != nil {
				continue // not an array of objects: the script decoder says why
			}
			for k, it := range items {
				raw, ok := it["target"]
				if !ok {
					continue
				}
				where := fmt.Sprintf("model.turns[%d].%s[%d]", i, name, k)
				var typ string
				_ = json.Unmarshal(it["type"], &typ)
				if !slices.Contains(targetKinds, typ) {
					return false, fmt.Errorf("%w: %s: a target is for one-point pointer actions (%s), not %q",
						ErrTest, where, strings.Join(targetKinds, ", "), typ)
				}
				if _, ok := it["x"]; ok {
					return false, fmt.Errorf("%w: %s: give a target or x and y, not both", ErrTest, where)
				}
				if _, ok := it["y"]; ok {
					return false, fmt.Errorf("%w: %s: give a target or x and y, not both", ErrTest, where)
				}
				var t Target
				if err := json.Unmarshal(raw, &t); err != nil {
					return false, fmt.Errorf("%w: %s: target: %v", ErrTest, where, err)
				}
				found = true
			}
		}
	}
	return found, nil
}

// targeting is a script model whose pointer actions may name their target:
// it resolves each target on the live page before the turn reaches the
// loop, which then runs the action as it runs any other.
type targeting struct {
	model harness.Model // the script
	eval  Evaluator     // the display's page
	// note reports what a target resolved to; nil: nothing.
	note   func(string)
	latest screen.Frame // the newest full screenshot the script was sent
}

func (m *targeting) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	if in.Shot != nil && !in.Shot.Frame.Zoomed() {
		m.latest = in.Shot.Frame
	}
	for _, r := range in.Results {
		if r.Shot != nil && !r.Shot.Frame.Zoomed() {
			m.latest = r.Shot.Frame
		}
	}
	turn, err := m.model.Next(ctx, in)
	if err != nil {
		return turn, err
	}
	for i := range turn.Calls {
		m.resolve(ctx, &turn.Calls[i])
	}
	return turn, nil
}

// resolve gives c's targeted actions their points, in the pixels of the
// newest screenshot, and c that screenshot's frame. A target that cannot be
// resolved makes the whole call a decode error: nothing of it runs.
func (m *targeting) resolve(ctx context.Context, c *harness.Call) {
	var items []map[string]json.RawMessage
	if json.Unmarshal(c.Raw, &items) != nil {
		return
	}
	found := false
	for i, it := range items {
		raw, ok := it["target"]
		if !ok {
			continue
		}
		found = true
		var t Target
		if err := json.Unmarshal(raw, &t); err != nil {
			m.fail(c, i, Target{}, err)
			return
		}
		p, what, err := m.locate(ctx, t)
		if err != nil {
			m.fail(c, i, t, err)
			return
		}
		it["x"], _ = json.Marshal(p.X)
		it["y"], _ = json.Marshal(p.Y)
		if m.note != nil {
			m.note(fmt.Sprintf("target %s: %s at (%g,%g)", t, what, p.X, p.Y))
		}
	}
	if !found {
		return
	}
	b, err := json.Marshal(items)
	if err != nil {
		m.fail(c, 0, Target{}, err)
		return
	}
	c.Raw = b
	c.Actions, c.DecodeErr = openai.DecodeActions(b)
	c.FrameID = m.latest.ID
}

func (m *targeting) fail(c *harness.Call, i int, t Target, err error) {
	c.Actions = nil
	c.DecodeErr = fmt.Errorf("%w: actions[%d]: target %s: %v", actions.ErrInvalid, i, t, err)
	if m.note != nil {
		m.note(c.DecodeErr.Error())
	}
}

// located is what targetExpr answers.
type located struct {
	X, Y  float64 // CSS px of the viewport
	What  string
	Error string
}

// locate finds t on the page and returns the point to act on, in the
// pixels of the newest screenshot, and what it found there.
func (m *targeting) locate(ctx context.Context, t Target) (actions.Point, string, error) {
	if m.eval == nil {
		return actions.Point{}, "", errors.New("this display has no DOM to find it in")
	}
	if m.latest.ID == "" {
		return actions.Point{}, "", errors.New("no screenshot to place it in")
	}
	v, err := m.eval.Eval(ctx, targetExpr(t))
	if err != nil {
		return actions.Point{}, "", err
	}
	var l located
	if err := json.Unmarshal(v, &l); err != nil {
		return actions.Point{}, "", fmt.Errorf("unexpected answer %s", v)
	}
	if l.Error != "" {
		return actions.Point{}, "", errors.New(l.Error)
	}
	p := m.latest.FromCSS(actions.Pt(l.X, l.Y))
	if p.X < 0 || p.Y < 0 || p.X >= float64(m.latest.Sent.W) || p.Y >= float64(m.latest.Sent.H) {
		return actions.Point{}, "", fmt.Errorf("%s is outside the screenshot", l.What)
	}
	return p, l.What, nil
}

// targetExpr finds t in the page and hit-tests it; it answers
// {X, Y, What} in CSS px of the viewport, or {Error}.
func targetExpr(t Target) string {
	q, _ := json.Marshal(t)
	return `(() => { const t = ` + string(q) + `;` + targetJS + `})()`
}

const targetJS = `
const norm = s => String(s || "").replace(/\s+/g, " ").trim();
const fold = s => t.exact ? norm(s) : norm(s).toLowerCase();
const equal = (s, want) => fold(s) === fold(want);
const has = (s, want) => t.exact ? fold(s) === fold(want) : fold(s).includes(fold(want));
const buttonInput = el => el.localName === "input" && ["button", "submit", "reset", "image"].includes((el.getAttribute("type") || "").toLowerCase());
const implicit = el => {
  const tag = el.localName, type = (el.getAttribute("type") || "text").toLowerCase();
  switch (tag) {
  case "button": case "summary": return "button";
  case "a": case "area": return el.hasAttribute("href") ? "link" : "";
  case "input":
    if (buttonInput(el)) return "button";
    return {checkbox: "checkbox", radio: "radio", range: "slider", search: "searchbox", number: "spinbutton",
      text: "textbox", email: "textbox", tel: "textbox", url: "textbox", password: "textbox"}[type] || "";
  case "textarea": return "textbox";
  case "select": return el.multiple || el.size > 1 ? "listbox" : "combobox";
  case "option": return "option";
  case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
  case "img": return el.getAttribute("alt") === "" ? "presentation" : "img";
  case "li": return "listitem";
  case "ul": case "ol": return "list";
  case "nav": return "navigation";
  case "main": return "main";
  case "dialog": return "dialog";
  case "table": return "table";
  case "tr": return "row";
  case "td": return "cell";
  case "form": return "form";
  }
  return "";
};
const role = el => (el.getAttribute("role") || "").trim().split(/\s+/)[0].toLowerCase() || implicit(el);
const textOf = el => {
  if (buttonInput(el)) return el.value || el.getAttribute("alt") || {submit: "Submit", reset: "Reset"}[(el.getAttribute("type") || "").toLowerCase()] || "";
  if (["input", "textarea", "select"].includes(el.localName)) return "";
  return norm(el.innerText);
};
const nameOf = el => {
  const label = norm(el.getAttribute("aria-label"));
  if (label) return label;
  const by = (el.getAttribute("aria-labelledby") || "").split(/\s+/).map(id => id && document.getElementById(id)).filter(Boolean);
  if (by.length) return norm(by.map(e => e.textContent).join(" "));
  if (el.labels && el.labels.length) {
    const s = norm([...el.labels].map(l => l.innerText).join(" "));
    if (s) return s;
  }
  if (buttonInput(el)) return textOf(el);
  if (["input", "textarea", "select"].includes(el.localName)) return norm(el.getAttribute("placeholder") || el.getAttribute("title"));
  if (el.localName === "img") return norm(el.getAttribute("alt") || el.getAttribute("title"));
  return norm(el.innerText) || norm(el.getAttribute("title"));
};
const shown = el => {
  const cs = getComputedStyle(el);
  if (cs.visibility === "hidden" || cs.visibility === "collapse" || cs.display === "none" || Number(cs.opacity) === 0) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};
const describe = el => {
  let d = "<" + el.localName + (el.id ? "#" + el.id : "") + ">";
  const s = textOf(el) || nameOf(el);
  if (s) d += " " + JSON.stringify(s.length > 60 ? s.slice(0, 59) + "\u2026" : s);
  return d;
};
let found = [];
for (const el of (document.body ? document.body.querySelectorAll("*") : [])) {
  if (t.role && role(el) !== t.role.toLowerCase()) continue;
  if (t.name && !has(nameOf(el), t.name)) continue;
  if (t.text && !has(textOf(el), t.text)) continue;
  if (!shown(el)) continue;
  found.push(el);
}
if (t.text) {
  const whole = found.filter(el => equal(textOf(el), t.text));
  if (whole.length) found = whole;
  if (!t.role) found = found.filter(el => !found.some(o => o !== el && el.contains(o)));
}
if (t.name && !t.exact) {
  const whole = found.filter(el => equal(nameOf(el), t.name));
  if (whole.length) found = whole;
}
if (!found.length) return {Error: "no visible element matches"};
if (t.nth === undefined && found.length > 1) {
  return {Error: found.length + " elements match (" + found.slice(0, 4).map(describe).join(", ") + (found.length > 4 ? ", ..." : "") + "); add nth (from 0) or say more"};
}
const n = t.nth === undefined ? 0 : t.nth;
if (n >= found.length) return {Error: "nth " + n + ", but only " + found.length + " element" + (found.length > 1 ? "s match" : " matches")};
const el = found[n], what = describe(el);
const r = el.getBoundingClientRect();
const vw = document.documentElement.clientWidth || innerWidth, vh = document.documentElement.clientHeight || innerHeight;
const x0 = Math.max(r.left, 0), x1 = Math.min(r.right, vw), y0 = Math.max(r.top, 0), y1 = Math.min(r.bottom, vh);
if (x1 - x0 < 1 || y1 - y0 < 1) {
  return {Error: what + " is outside the visible part of the page (at " + Math.round(r.left + r.width / 2) + ", " + Math.round(r.top + r.height / 2) + " of a " + vw + "x" + vh + " viewport); scroll to it first"};
}
const hits = h => h && (h === el || el.contains(h) || (h.localName === "label" && h.control === el));
const points = [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75], [0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]];
let cover = null;
for (const [fx, fy] of points) {
  const x = x0 + (x1 - x0) * fx, y = y0 + (y1 - y0) * fy;
  const h = document.elementFromPoint(x, y);
  if (hits(h)) return {X: x, Y: y, What: what};
  cover = cover || h;
}
return {Error: what + " is covered" + (cover ? " by " + describe(cover) : "") + ": a click there would reach that instead"};
`
