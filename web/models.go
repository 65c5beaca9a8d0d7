package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/screen"
)

// defaultModel builds a session's model with the provider adapters
// (wiring.NewModel), with keys and base URLs from getenv, or the built-in
// demo's.
func defaultModel(m session.ModelSpec, image screen.Size, tools []harness.ToolSpec, getenv func(string) string, log *slog.Logger) (harness.Model, error) {
	if m.Provider == session.ProviderDemo {
		return demoModel(image, tools, log)
	}
	spec := wiring.ModelSpec{Provider: m.Provider, Name: m.Name, BaseURL: m.BaseURL, MaxTokens: m.MaxTokens, Context: m.Context,
		Turns: m.Turns}
	return wiring.NewModel(spec, image, tools, getenv, log)
}

// HeaderProviderKey is the request header of PUT /session that carries the
// client's own provider key. The server keeps it in memory, for that
// session's model only: it is never stored, logged or sent back, so a
// session that needs it cannot resume after a restart.
const HeaderProviderKey = "X-Spotter-Provider-Key"

// maxProviderKey bounds the length of a client's key.
const maxProviderKey = 4096

// creation marks, in a request's context, the creation of a session (PUT
// /session), with the client's own provider key if it sent one.
type creation struct{ key string }

type creationKey struct{}

// providerEnv says where a provider adapter finds its key in the
// environment, and where the provider's official endpoint is.
type providerEnv struct {
	official string   // the official endpoint; "" for none
	keys     []string // the variables that hold the key
	base     string   // the variable of the operator's base URL
	account  []string // variables that name the server's account, which a client's key does not get
}

var providerEnvs = map[string]providerEnv{
	"anthropic": {official: anthropic.DefaultBaseURL, keys: []string{"ANTHROPIC_API_KEY"}, base: "ANTHROPIC_BASE_URL"},
	"openai": {official: openai.DefaultBaseURL, keys: []string{"OPENAI_API_KEY"}, base: "OPENAI_BASE_URL",
		account: []string{"OPENAI_ORG_ID", "OPENAI_PROJECT_ID"}},
	"gemini": {official: gemini.DefaultBaseURL, keys: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, base: "GOOGLE_GEMINI_BASE_URL"},
	// Open models on an OpenAI-compatible server: no official endpoint,
	// so the server's OPENAI_API_KEY goes only where the operator said.
	"chat": {keys: []string{"OPENAI_API_KEY"}, base: "OPENAI_BASE_URL"},
}

// modelEnv returns the environment a session's model adapter is built
// from. The server's own keys go only to the provider's official endpoint,
// to the operator's base URL (getenv) and to Config.AllowBaseURLs. A
// session that names another base URL must bring its own key (ctx, from
// HeaderProviderKey), and plain http is refused there unless the host is
// loopback. A client's key replaces the server's, and the server's
// account variables are left out.
func (s *Server) modelEnv(ctx context.Context, m session.ModelSpec, getenv func(string) string) (func(string) string, error) {
	pe, ok := providerEnvs[m.Provider]
	if !ok {
		return getenv, nil // a script, or a provider the runner refuses
	}
	cr, creating := ctx.Value(creationKey{}).(creation)
	own := func(k string) string {
		switch {
		case slices.Contains(pe.keys, k):
			return cr.key
		case slices.Contains(pe.account, k):
			return ""
		}
		return getenv(k)
	}
	keyless := func(k string) string {
		if slices.Contains(pe.keys, k) || slices.Contains(pe.account, k) {
			return ""
		}
		return getenv(k)
	}
	operator := strings.TrimSpace(getenv(pe.base))
	if strings.TrimSpace(m.BaseURL) == "" {
		// The operator's base URL, or the provider's default endpoint.
		switch {
		case cr.key != "":
			return own, nil
		case operator != "" || pe.official != "":
			return getenv, nil
		}
		return keyless, nil // chat's default: a server on this host the operator did not name
	}
	u, err := parseBaseURL(m.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("model.base_url: %w", err)
	}
	shown := u.Scheme + "://" + u.Host + u.EscapedPath()
	trusted := s.trusted(u, pe.official, operator)
	switch {
	case u.Scheme == "http" && !trusted && !loopback(u.Hostname()):
		return nil, fmt.Errorf("model.base_url %s: plain http is refused for any host but loopback, since the key and "+
			"the screenshots would cross the network unencrypted; use https, or ask the operator to allow it "+
			"(spotter serve --allow-base-url)", shown)
	case cr.key != "":
		return own, nil
	case trusted:
		return getenv, nil
	case !creating:
		return nil, fmt.Errorf("model.base_url %s is not an endpoint this server sends its own provider keys to, and the "+
			"key this session brought (%s) was held in memory only, so it is gone after the restart: create a new session "+
			"and send the key again", shown, HeaderProviderKey)
	}
	return nil, fmt.Errorf("model.base_url %s is not an endpoint this server sends its own provider keys to: send your "+
		"own key in the %s header, or ask the operator to allow this base URL (spotter serve --allow-base-url)",
		shown, HeaderProviderKey)
}

// trusted reports whether the server may send its own key to u: the
// provider's official endpoint, the operator's base URL, or one of
// Config.AllowBaseURLs.
func (s *Server) trusted(u *url.URL, official, operator string) bool {
	for _, b := range []string{official, operator} {
		if b == "" {
			continue
		}
		if bu, err := parseBaseURL(b); err == nil && within(u, bu) {
			return true
		}
	}
	return slices.ContainsFunc(s.allowed, func(a *url.URL) bool { return within(u, a) })
}

// CheckBaseURL reports whether raw can be one of Config.AllowBaseURLs: an
// http or https URL with a host, and no user name, password, query,
// fragment, or . or .. path segments.
func CheckBaseURL(raw string) error {
	_, err := parseBaseURL(raw)
	return err
}

// parseBaseURLs parses Config.AllowBaseURLs.
func parseBaseURLs(raw []string) ([]*url.URL, error) {
	var out []*url.URL
	for _, r := range raw {
		u, err := parseBaseURL(r)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", r, err)
		}
		out = append(out, u)
	}
	return out, nil
}

var errBaseURL = errors.New("want an http or https URL with a host, and no user name, password, query or fragment")

// parseBaseURL parses a model base URL, normalized: lower-case scheme and
// host, no default port.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, errBaseURL
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, errors.New("the path may not hold . or .. segments")
		}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	if port != "" {
		u.Host += ":" + port
	}
	return u, nil
}

// within reports whether u is at base's origin, under base's path.
func within(u, base *url.URL) bool {
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return false
	}
	prefix := strings.TrimSuffix(base.EscapedPath(), "/")
	p := u.EscapedPath()
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

// loopback reports whether host is this machine's loopback.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// validProviderKey reports whether a client's key can be sent as a header:
// printable ASCII without spaces, of a sane length.
func validProviderKey(k string) bool {
	if k == "" || len(k) > maxProviderKey {
		return false
	}
	for i := range len(k) {
		if k[i] <= ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}
