package harness

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
)

// minSecret is the shortest value redacted: shorter ones would mangle
// ordinary text ("a" everywhere) and protect little.
const minSecret = 4

// redactor replaces secret values in everything a run records.
type redactor struct {
	values []string // longest first, so a secret containing another is masked whole
	masks  map[string]string
}

func (r *redactor) add(v, mask string) {
	if len(v) < minSecret || slices.Contains(r.values, v) {
		return
	}
	if r.masks == nil {
		r.masks = map[string]string{}
	}
	r.masks[v] = mask
	r.values = append(r.values, v)
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
}

func (r *redactor) str(s string) string {
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, r.masks[v])
		}
	}
	return s
}

// json redacts a JSON document, where a secret may appear escaped.
func (r *redactor) json(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return b
	}
	out := b
	for _, v := range r.values {
		esc, _ := json.Marshal(v)
		esc = esc[1 : len(esc)-1] // without the quotes
		mask, _ := json.Marshal(r.masks[v])
		mask = mask[1 : len(mask)-1]
		if bytes.Contains(out, esc) {
			out = bytes.ReplaceAll(out, esc, mask)
		}
	}
	return out
}

// event redacts e in place. A secret action's text is masked whole.
func (r *redactor) event(e *trace.Event) {
	if e.Secret && e.Action.Text != "" {
		e.Action.Text, e.Mapped.Text = "[secret]", "[secret]"
	}
	if len(r.values) == 0 {
		return
	}
	e.Task, e.Text, e.Error = r.str(e.Task), r.str(e.Text), r.str(e.Error)
	if e.Notes != nil {
		notes := make([]string, len(e.Notes))
		for i, n := range e.Notes {
			notes[i] = r.str(n)
		}
		e.Notes = notes
	}
	e.Action.Text, e.Mapped.Text = r.str(e.Action.Text), r.str(e.Mapped.Text)
	e.Action.URL, e.Mapped.URL, e.Frame.URL = r.str(e.Action.URL), r.str(e.Mapped.URL), r.str(e.Frame.URL)
	e.Raw, e.Input = r.json(e.Raw), r.json(e.Input)
}

// maskTyped returns raw with the text of the batch's Type actions replaced,
// so that a call event never holds typed text: whether the text was secret
// (a password field) is known only when the action runs. The action events
// hold the text, masked when it was secret.
func maskTyped(raw json.RawMessage, batch []actions.Action) json.RawMessage {
	var r redactor
	for _, a := range batch {
		if a.Kind == actions.Type || (a.Kind == actions.Dialog && a.Text != "") {
			r.add(a.Text, "[typed text]")
		}
	}
	return r.json(raw)
}
