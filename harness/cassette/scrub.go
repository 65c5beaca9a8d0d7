package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces every secret value in a recording.
const Redacted = "[REDACTED]"

// MinImageChars is the shortest JSON string that may be taken for a base64
// image and replaced by a placeholder.
const MinImageChars = 1024

// minAutoSecret is the shortest value taken from a request's credentials
// to redact everywhere: shorter ones ("test") would redact ordinary words.
const minAutoSecret = 8

// SecretHeaders are never recorded, and their values are redacted
// everywhere. Names are lower case.
var SecretHeaders = []string{
	"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key",
	"openai-organization", "openai-project", "anthropic-organization-id",
	"cookie", "set-cookie", "x-goog-user-project",
}

// SecretParams are query parameters that are never recorded, and whose
// values are redacted everywhere. Names are lower case.
var SecretParams = []string{"key", "api_key", "apikey", "access_token", "token"}

// RequestHeaders are the request headers a Recorder keeps.
var RequestHeaders = []string{"content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta"}

// ResponseHeaders are the response headers a Recorder keeps; it also keeps
// every header that starts with one of ResponseHeaderPrefixes.
var ResponseHeaders = []string{"content-type", "request-id", "x-request-id", "retry-after", "retry-after-ms", "x-should-retry"}

// ResponseHeaderPrefixes are prefixes of response headers a Recorder keeps:
// rate limits.
var ResponseHeaderPrefixes = []string{"anthropic-ratelimit-", "x-ratelimit-"}

func isSecretHeader(name string) bool {
	return slices.Contains(SecretHeaders, strings.ToLower(name))
}

func isSecretParam(name string) bool {
	return slices.Contains(SecretParams, strings.ToLower(name))
}

// secrets is a set of values to redact.
type secrets []string

// add adds v, and a bearer token's token, if long enough (or forced).
func (s *secrets) add(v string, force bool) {
	v = strings.TrimSpace(v)
	if scheme, tok, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "bearer") {
		s.add(tok, force)
	}
	if v == "" || (!force && len(v) < minAutoSecret) || slices.Contains(*s, v) {
		return
	}
	*s = append(*s, v)
	// Longest first, so a secret that contains another is redacted whole.
	slices.SortStableFunc(*s, func(a, b string) int { return len(b) - len(a) })
}

// fromRequest adds the credentials r carries.
func (s *secrets) fromRequest(r *http.Request) {
	for name, vs := range r.Header {
		if isSecretHeader(name) {
			for _, v := range vs {
				s.add(v, false)
			}
		}
	}
	for name, vs := range r.URL.Query() {
		if isSecretParam(name) {
			for _, v := range vs {
				s.add(v, false)
			}
		}
	}
}

// redact replaces every secret in b, as it is and as it looks inside a
// JSON string or a URL query.
func (s secrets) redact(b []byte) []byte {
	for _, v := range s {
		forms := []string{v}
		if q, err := json.Marshal(v); err == nil {
			forms = append(forms, string(q[1:len(q)-1]))
		}
		forms = append(forms, url.QueryEscape(v))
		for _, f := range forms {
			if f != "" {
				b = bytes.ReplaceAll(b, []byte(f), []byte(Redacted))
			}
		}
	}
	return b
}

func (s secrets) redactString(v string) string { return string(s.redact([]byte(v))) }

// scrubURL returns u without secret query parameters and with secrets
// redacted.
func (s secrets) scrubURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err == nil {
			for k := range q {
				if isSecretParam(k) {
					q.Del(k)
				}
			}
			c.RawQuery = q.Encode()
		}
	}
	return s.redactString(c.String())
}

// keepHeaders returns the headers of h that keep says to keep, lower-cased,
// secrets redacted. Secret headers are never kept.
func (s secrets) keepHeaders(h http.Header, keep func(string) bool) map[string]string {
	var out map[string]string
	for name, vs := range h {
		lower := strings.ToLower(name)
		if isSecretHeader(lower) || !keep(lower) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[lower] = s.redactString(strings.Join(vs, ", "))
	}
	return out
}

// stripImages replaces each base64 image in the JSON strings of body that
// is at least minChars long (quotes included) by a placeholder. A body that
// is not JSON is returned as it is. Key order and everything else are kept
// byte for byte.
func stripImages(body []byte, minChars int) []byte {
	if len(body) < minChars || !json.Valid(body) {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var out []byte
	last := 0 // body[:last] is in out already
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			break // io.EOF: json.Valid said the rest is fine
		}
		if _, ok := tok.(string); !ok {
			continue
		}
		after := dec.InputOffset()
		if after-before < int64(minChars) {
			continue
		}
		start := before + int64(bytes.IndexByte(body[before:after], '"'))
		s := tok.(string)
		repl, ok := imagePlaceholder(s)
		if !ok {
			continue
		}
		q, err := json.Marshal(repl)
		if err != nil {
			continue
		}
		out = append(out, body[last:start]...)
		out = append(out, q...)
		last = int(after)
	}
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// imagePlaceholder returns what replaces s, a base64 image or a data: URL
// of one; ok is false if s is not an image.
func imagePlaceholder(s string) (string, bool) {
	prefix, data := "", s
	if strings.HasPrefix(s, "data:") {
		i := strings.Index(s, ";base64,")
		if i < 0 || i > 200 {
			return "", false
		}
		prefix, data = s[:i+len(";base64,")], s[i+len(";base64,"):]
	}
	img, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		if img, err = base64.RawStdEncoding.DecodeString(data); err != nil {
			return "", false
		}
	}
	mime := http.DetectContentType(img)
	if !strings.HasPrefix(mime, "image/") {
		return "", false
	}
	sum := sha256.Sum256(img)
	return fmt.Sprintf("%s[%s %d bytes sha256:%s]", prefix, mime, len(img), hex.EncodeToString(sum[:])), true
}

// readBody reads and closes rc; a nil rc is an empty body.
func readBody(rc io.ReadCloser) ([]byte, error) {
	if rc == nil || rc == http.NoBody {
		return nil, nil
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
