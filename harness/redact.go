package harness

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
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

// toModel returns in with every secret value redacted: a page can reflect a
// secret (in its URL, in a dialog), and the model must not see it either.
func (l *loop) toModel(in Input) Input {
	l.mu.Lock()
	r := l.redact
	l.mu.Unlock()
	if len(r.values) == 0 {
		return in
	}
	out := in
	out.Task = r.str(in.Task)
	if in.Shot != nil {
		out.Shot = r.shot(in.Shot)
	}
	if in.Results != nil {
		out.Results = make([]Result, len(in.Results))
		for i, res := range in.Results {
			res.Output = r.str(res.Output)
			if res.Notes != nil {
				notes := make([]string, len(res.Notes))
				for j, n := range res.Notes {
					notes[j] = r.str(n)
				}
				res.Notes = notes
			}
			if res.Err != nil {
				if msg := r.str(res.Err.Error()); msg != res.Err.Error() {
					res.Err = redactedError{msg: msg, err: res.Err}
				}
			}
			if res.Shot != nil {
				res.Shot = r.shot(res.Shot)
			}
			if res.Zoom != nil {
				res.Zoom = r.shot(res.Zoom)
			}
			out.Results[i] = res
		}
	}
	return out
}

// shot returns a copy of s with its URL and events redacted.
func (r *redactor) shot(s *screen.Shot) *screen.Shot {
	c := *s
	c.Frame.URL = r.str(c.Frame.URL)
	if c.Events != nil {
		c.Events = make([]string, len(s.Events))
		for i, e := range s.Events {
			c.Events[i] = r.str(e)
		}
	}
	return &c
}

// redactedError shows a redacted message and still matches what it wraps.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }
