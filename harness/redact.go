package harness

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// minSecret is the shortest value redacted: shorter ones would mangle
// ordinary text ("a" everywhere) and protect little.
const minSecret = 4

// Redactor replaces secret values in what is recorded. The Executor keeps
// one with every secret it has seen; callers that store things the events
// do not carry (a model's saved conversation) pass them through a copy
// (Executor.Redactor). Its zero value redacts nothing.
type Redactor struct {
	values []string // longest first, so a secret containing another is masked whole
	masks  map[string]string
}

// add makes r redact v, as it is and as URLs write it (a page can put a
// secret into its address or a request's, and so into a note that names
// it), with mask.
func (r *Redactor) add(v, mask string) {
	for _, f := range urlForms(v) {
		r.addOne(f, mask)
	}
}

// urlForms returns v and the forms a URL gives it: Go's query and path
// escaping, JavaScript's encodeURIComponent and an HTML form's encoding.
func urlForms(v string) []string {
	forms := []string{v}
	for _, f := range []string{url.QueryEscape(v), url.PathEscape(v), escapeExcept(v, "-_.!~*'()", false), escapeExcept(v, "*-._", true)} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// escapeExcept percent-encodes every byte of v but ASCII letters, digits
// and keep; with plus, a space becomes "+".
func escapeExcept(v, keep string, plus bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ' && plus:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func (r *Redactor) addOne(v, mask string) {
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

func (r *Redactor) clone() Redactor {
	c := Redactor{values: append([]string(nil), r.values...), masks: make(map[string]string, len(r.masks))}
	for k, v := range r.masks {
		c.masks[k] = v
	}
	return c
}

// Empty reports whether r has nothing to redact.
func (r *Redactor) Empty() bool { return len(r.values) == 0 }

// String returns s with every secret value replaced by its mask.
func (r *Redactor) String(s string) string {
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, r.masks[v])
		}
	}
	return s
}

// JSON redacts a JSON document, where a secret may appear escaped.
func (r *Redactor) JSON(b json.RawMessage) json.RawMessage {
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
func (r *Redactor) event(e *trace.Event) {
	if e.Secret || e.Action.Secret {
		e.Secret = true
		if e.Action.Text != "" {
			e.Action.Text, e.Mapped.Text = actions.SecretMask, actions.SecretMask
		}
		e.Action.Secret, e.Mapped.Secret = true, true
	}
	if len(r.values) == 0 {
		return
	}
	e.Task, e.Text, e.Error = r.String(e.Task), r.String(e.Text), r.String(e.Error)
	if e.Notes != nil {
		notes := make([]string, len(e.Notes))
		for i, n := range e.Notes {
			notes[i] = r.String(n)
		}
		e.Notes = notes
	}
	e.Action.Text, e.Mapped.Text = r.String(e.Action.Text), r.String(e.Mapped.Text)
	e.Action.URL, e.Mapped.URL, e.Frame.URL = r.URL(e.Action.URL), r.URL(e.Mapped.URL), r.URL(e.Frame.URL)
	e.Raw, e.Input = r.JSON(e.Raw), r.JSON(e.Input)
	if !e.Page.Empty() {
		e.Page = r.page(e.Page)
	}
}

// page returns a copy of l with every secret value redacted from its
// messages and URLs.
func (r *Redactor) page(l screen.PageLog) screen.PageLog {
	out := l
	out.Console = make([]screen.ConsoleMessage, len(l.Console))
	for i, m := range l.Console {
		m.Text, m.Where = r.String(m.Text), r.URL(m.Where)
		out.Console[i] = m
	}
	out.Requests = make([]screen.Request, len(l.Requests))
	for i, q := range l.Requests {
		q.URL, q.Error = r.URL(q.URL), r.String(q.Error)
		out.Requests[i] = q
	}
	return out
}

// URL returns u with every secret value redacted, as it is and as a URL
// encodes it: a form sent with GET puts what was typed into the query,
// percent-encoded, and a page may put it into the path. Each part of the
// path, query and fragment that holds a secret once decoded is written
// again with the secret masked.
func (r *Redactor) URL(u string) string {
	u = r.String(u)
	if len(r.values) == 0 || !strings.ContainsAny(u, "%+") {
		return u
	}
	rest, frag, hasFrag := strings.Cut(u, "#")
	path, query, hasQuery := strings.Cut(rest, "?")
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if d, err := url.PathUnescape(p); err == nil && d != p {
			if m := r.String(d); m != d {
				parts[i] = url.PathEscape(m)
			}
		}
	}
	out := strings.Join(parts, "/")
	if hasQuery {
		out += "?" + r.formEncoded(query)
	}
	if hasFrag {
		out += "#" + r.formEncoded(frag)
	}
	return out
}

// formEncoded redacts the names and values of a query string.
func (r *Redactor) formEncoded(q string) string {
	pairs := strings.Split(q, "&")
	for i, kv := range pairs {
		k, v, hasV := strings.Cut(kv, "=")
		for _, s := range []*string{&k, &v} {
			if d, err := url.QueryUnescape(*s); err == nil && d != *s {
				if m := r.String(d); m != d {
					*s = url.QueryEscape(m)
				}
			}
		}
		if hasV {
			pairs[i] = k + "=" + v
		} else {
			pairs[i] = k
		}
	}
	return strings.Join(pairs, "&")
}

// scrub rewrites the model's own conversation, when it is Stateful and the
// run has learnt secrets since the last time, as a restart would restore
// it: every secret redacted. The model's earlier calls hold what it typed
// (a password, whether it was typed, refused or never decided), and an
// adapter sends its whole conversation with every request; so the next
// request, like everything else recorded, carries the mask instead. A
// conversation that cannot be rewritten is left as it is, and logged.
func (l *loop) scrub() {
	sm, ok := l.cfg.Model.(Stateful)
	if !ok {
		return
	}
	r := l.exec.Redactor()
	if len(r.values) == l.scrubbed {
		return
	}
	l.scrubbed = len(r.values)
	b, err := sm.MarshalState()
	if err != nil {
		l.log.Error("save the model's conversation to redact it", "err", err)
		return
	}
	if red := r.JSON(b); !bytes.Equal(red, b) {
		if err := sm.UnmarshalState(red); err != nil {
			l.log.Error("restore the model's conversation with its secrets redacted", "err", err)
		}
	}
}

// toModel returns in with every secret value redacted: a page can reflect a
// secret (in its URL, in a dialog), and the model must not see it either.
func (l *loop) toModel(in Input) Input {
	r := l.exec.Redactor()
	if r.Empty() {
		return in
	}
	out := in
	out.Task = r.String(in.Task)
	if in.Shot != nil {
		out.Shot = r.shot(in.Shot)
	}
	if in.Results != nil {
		out.Results = make([]Result, len(in.Results))
		for i, res := range in.Results {
			res.Output = r.String(res.Output)
			if res.Notes != nil {
				notes := make([]string, len(res.Notes))
				for j, n := range res.Notes {
					notes[j] = r.String(n)
				}
				res.Notes = notes
			}
			if res.Err != nil {
				if msg := r.String(res.Err.Error()); msg != res.Err.Error() {
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
func (r *Redactor) shot(s *screen.Shot) *screen.Shot {
	c := *s
	c.Frame.URL = r.URL(c.Frame.URL)
	if c.Events != nil {
		c.Events = make([]string, len(s.Events))
		for i, e := range s.Events {
			c.Events[i] = r.String(e)
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
