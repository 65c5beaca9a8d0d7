package cassette

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Version is the cassette format version this package reads and writes.
const Version = 1

// MaxFileBytes bounds the size of a cassette, decompressed, that Load and
// Parse accept.
const MaxFileBytes = 256 << 20

// ErrFormat marks a cassette file that cannot be read.
var ErrFormat = errors.New("bad cassette")

// Cassette is a recording: interactions in the order they happened.
type Cassette struct {
	Version      int           `json:"version"`
	Comment      string        `json:"comment,omitempty"`
	Interactions []Interaction `json:"interactions"`
}

// Interaction is one request and the response it got.
type Interaction struct {
	Request  Request  `json:"request"`
	Response Response `json:"response"`
}

// Request is a recorded request.
type Request struct {
	Method string `json:"method"`
	// URL is absolute, as sent, with secret query parameters removed.
	// Replay compares its path and query, not its scheme and host.
	URL string `json:"url"`
	// Header holds the kept headers, by lower-case name; several values
	// are joined with ", ".
	Header map[string]string `json:"header,omitempty"`
	// Match is what replay checks the body against. When it is nil, it is
	// derived from the body (MatchBody); with no body either, only the
	// method, path and query are checked.
	Match *Match `json:"match,omitempty"`
	Payload
}

// Response is a recorded response.
type Response struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Payload
}

// Payload is a body. At most one field is set: JSON for a JSON body, Text
// for other UTF-8 text, Base64 for anything else. All empty is no body.
type Payload struct {
	JSON   json.RawMessage `json:"body,omitempty"`
	Text   string          `json:"body_text,omitempty"`
	Base64 []byte          `json:"body_base64,omitempty"`
}

// Bytes returns the body as it goes on the wire: JSON compacted, the
// others as stored.
func (p Payload) Bytes() []byte {
	switch {
	case len(p.JSON) > 0:
		var b bytes.Buffer
		if err := json.Compact(&b, p.JSON); err != nil {
			return bytes.Clone(p.JSON) // checked by Parse; a hand-built Payload goes out as it is
		}
		return b.Bytes()
	case p.Text != "":
		return []byte(p.Text)
	}
	return bytes.Clone(p.Base64)
}

// newPayload stores b in the form that suits it.
func newPayload(b []byte) Payload {
	switch {
	case len(b) == 0:
		return Payload{}
	case json.Valid(b):
		return Payload{JSON: json.RawMessage(bytes.TrimSpace(b))}
	case utf8.Valid(b):
		return Payload{Text: string(b)}
	}
	return Payload{Base64: bytes.Clone(b)}
}

func (p Payload) check() error {
	n := 0
	for _, set := range []bool{len(p.JSON) > 0, p.Text != "", len(p.Base64) > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		return errors.New("more than one of body, body_text and body_base64")
	}
	return nil
}

// Load reads the cassette at path; a path ending in ".gz" is gunzipped.
func Load(path string) (*Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load cassette: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("load cassette %s: %w: %v", path, ErrFormat, err)
		}
		defer zr.Close()
		r = zr
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load cassette %s: %w: %v", path, ErrFormat, err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("load cassette %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and checks a cassette. Errors wrap ErrFormat and say where
// the problem is: a line and column, or an interaction's index.
func Parse(b []byte) (*Cassette, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrFormat, MaxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Cassette
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrFormat, describeJSONError(b, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s: data after the cassette", ErrFormat, position(b, dec.InputOffset()-1))
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return &c, nil
}

// check reports the first problem in c.
func (c *Cassette) check() error {
	if c.Version != Version {
		return fmt.Errorf("version %d, want %d", c.Version, Version)
	}
	for i, it := range c.Interactions {
		if err := it.check(); err != nil {
			return fmt.Errorf("interaction %d: %v", i, err)
		}
	}
	return nil
}

func (it Interaction) check() error {
	rq, rs := it.Request, it.Response
	if rq.Method == "" || strings.ContainsAny(rq.Method, " \t\r\n/") {
		return fmt.Errorf("request method %q", rq.Method)
	}
	u, err := url.Parse(rq.URL)
	if err != nil {
		return fmt.Errorf("request url: %v", err)
	}
	if !strings.HasPrefix(u.EscapedPath(), "/") {
		return fmt.Errorf("request url %q: want an absolute URL or a path starting with /", rq.URL)
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return fmt.Errorf("request url %q: query: %v", rq.URL, err)
	}
	if err := rq.Payload.check(); err != nil {
		return fmt.Errorf("request: %v", err)
	}
	if rs.Status < 100 || rs.Status > 599 {
		return fmt.Errorf("response status %d: want 100..599", rs.Status)
	}
	if err := rs.Payload.check(); err != nil {
		return fmt.Errorf("response: %v", err)
	}
	for _, h := range []map[string]string{rq.Header, rs.Header} {
		for k, v := range h {
			if !validHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("header %q: %q is not a valid header", k, v)
			}
		}
	}
	return nil
}

// validHeaderName reports whether s is an HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// describeJSONError says where in b a decoding error is.
func describeJSONError(b []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return position(b, syn.Offset-1) + ": " + syn.Error() // Offset is just past the bad byte
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return fmt.Sprintf("%s: %s is JSON %s, want %s", position(b, typ.Offset), field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated"
	}
	return err.Error()
}

// position turns a byte offset into "line L, column C".
func position(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Encode writes c as an indented JSON document.
func (c *Cassette) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// Write saves c to path, gzipped if path ends in ".gz". It writes a
// temporary file beside path and renames it, so a reader never sees half a
// cassette.
func (c *Cassette) Write(path string) error {
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	if err := c.Encode(w); err != nil {
		return fmt.Errorf("write cassette %s: %w", path, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("write cassette %s: %w", path, err)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write cassette: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write cassette %s: %w", path, err)
	}
	return nil
}

// clone returns a deep copy of c.
func (c *Cassette) clone() *Cassette {
	out := *c
	out.Interactions = make([]Interaction, len(c.Interactions))
	for i, it := range c.Interactions {
		it.Request.Header = cloneMap(it.Request.Header)
		it.Response.Header = cloneMap(it.Response.Header)
		if it.Request.Match != nil {
			m := *it.Request.Match
			m.Answers = append([]string(nil), m.Answers...)
			it.Request.Match = &m
		}
		out.Interactions[i] = it
	}
	return &out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
