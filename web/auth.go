package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"
)

// Cookie names (docs/API.md, "Authentication").
const (
	cookieAuth = "spotter_auth"
	cookieCSRF = "spotter_csrf"
	headerCSRF = "X-CSRF-Token"
)

// Actors, as the audit log names them.
const (
	actorAPI      = "token:api"         // a client with the bearer token
	actorOperator = "operator:panel"    // the panel, logged in with the token
	actorScoped   = "token:session/"    // + the session id: a session-scoped token
	actorClient   = "token:mcp-client/" // + the client's name: an MCP client token
)

const (
	ctxActor = "spotter.actor"
	ctxScope = "spotter.scope" // the session of a scoped token
	ctxMCP   = "spotter.mcp"   // the client of an MCP client token
)

// derive makes a credential from the server token, so that cookies stay
// valid across restarts with the same token and never reveal it.
func (s *Server) derive(purpose string) string {
	m := hmac.New(sha256.New, []byte(s.token))
	m.Write([]byte("spotter/" + purpose))
	return hex.EncodeToString(m.Sum(nil))
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// unsafeMethod reports whether a request may change state.
func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// crossSite refuses requests that a browser made for another site: any
// request marked cross-site by Sec-Fetch-Site, and any state-changing
// request from another origin (http.CrossOriginProtection).
//
// It also takes a client's own provider key (HeaderProviderKey) off the
// request, so that nothing after it can log or echo the header: PUT
// /session gets it in its context, every other route ignores it.
func (s *Server) crossSite(c *gin.Context) {
	keys := c.Request.Header.Values(HeaderProviderKey)
	c.Request.Header.Del(HeaderProviderKey)
	if c.Request.Method+" "+c.FullPath() == "PUT /session" {
		var key string
		switch {
		case len(keys) > 1:
			abort(c, http.StatusBadRequest, HeaderProviderKey+": send it once")
			return
		case len(keys) == 1:
			key = strings.TrimSpace(keys[0])
			if !validProviderKey(key) {
				abort(c, http.StatusBadRequest, fmt.Sprintf("%s: want the key in printable ASCII without spaces, at most %d characters",
					HeaderProviderKey, maxProviderKey))
				return
			}
		}
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), creationKey{}, creation{key: key}))
	}
	if c.GetHeader("Sec-Fetch-Site") == "cross-site" {
		abort(c, http.StatusForbidden, "cross-site request refused")
		return
	}
	if unsafeMethod(c.Request.Method) {
		if err := s.cop.Check(c.Request); err != nil {
			abort(c, http.StatusForbidden, "cross-origin request refused")
			return
		}
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, MaxBody)
	c.Next()
}

// authenticate lets through the server token, a session-scoped token (on
// its session's routes only), or the login cookie with (on state-changing
// requests) the CSRF token. It then applies the rate limits on decisions.
func (s *Server) authenticate(c *gin.Context) {
	if h := c.GetHeader("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		tok = strings.TrimSpace(tok)
		switch {
		case !ok:
			abort(c, http.StatusUnauthorized, "bad credentials")
			return
		case equal(tok, s.token):
			c.Set(ctxActor, actorAPI)
		default:
			if client, ok := s.mcpClient(tok); ok {
				route := c.Request.Method + " " + c.FullPath()
				if !mcpRoutes[route] && route != "POST /logout" {
					abort(c, http.StatusForbidden, "an MCP client token can use /mcp only")
					return
				}
				c.Set(ctxActor, actorClient+client)
				c.Set(ctxMCP, client)
				break
			}
			sid, ok := s.scopedSession(tok)
			if !ok {
				abort(c, http.StatusUnauthorized, "bad credentials")
				return
			}
			if why := s.outOfScope(c, sid); why != "" {
				abort(c, http.StatusForbidden, why)
				return
			}
			c.Set(ctxActor, actorScoped+sid)
			c.Set(ctxScope, sid)
		}
		if s.limitDecisions(c, actor(c)) {
			c.Next()
		}
		return
	}
	ck, err := c.Cookie(cookieAuth)
	if err != nil || !equal(ck, s.derive("auth")) {
		abort(c, http.StatusUnauthorized, "credentials required")
		return
	}
	if unsafeMethod(c.Request.Method) && !equal(c.GetHeader(headerCSRF), s.derive("csrf")) {
		abort(c, http.StatusForbidden, "missing or bad CSRF token")
		return
	}
	c.Set(ctxActor, actorOperator)
	if s.limitDecisions(c, actorOperator) {
		c.Next()
	}
}

func actor(c *gin.Context) string { return c.GetString(ctxActor) }

// login checks the token a person typed into the panel and sets the
// cookies.
//
// Only wrong tokens count against the address's limit (loginLimit), and
// the right token gets in even when the address is over it: a process that
// shares the operator's address (any local one, or everyone behind a
// proxy) cannot lock the operator out. A wrong token over the limit is
// answered 429 and not audited, so a flood does not fill the audit log.
func (s *Server) login(c *gin.Context) {
	tok := c.PostForm("token")
	if tok == "" {
		var body struct {
			Token string `json:"token"`
		}
		if strings.HasPrefix(c.ContentType(), "application/json") {
			_ = c.ShouldBindJSON(&body)
		}
		tok = body.Token
	}
	if !equal(tok, s.token) {
		if !s.allow(c, loginLimit, remoteHost(c.Request), 1) {
			return
		}
		s.mgr.Audit(c.Request.Context(), "anonymous", "login_failed", "", "", map[string]string{"remote": remoteHost(c.Request)})
		abort(c, http.StatusUnauthorized, "bad token")
		return
	}
	secure := c.Request.TLS != nil
	http.SetCookie(c.Writer, &http.Cookie{Name: cookieAuth, Value: s.derive("auth"), Path: "/", HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteStrictMode})
	http.SetCookie(c.Writer, &http.Cookie{Name: cookieCSRF, Value: s.derive("csrf"), Path: "/",
		Secure: secure, SameSite: http.SameSiteStrictMode})
	s.mgr.Audit(c.Request.Context(), actorOperator, "login", "", "", map[string]string{"remote": remoteHost(c.Request)})
	c.JSON(http.StatusOK, gin.H{"ok": true, "csrf": s.derive("csrf")})
}

// logout clears the cookies. The cookie values derive from the token, so
// they stay valid elsewhere until the token changes.
func (s *Server) logout(c *gin.Context) {
	for _, n := range []string{cookieAuth, cookieCSRF} {
		http.SetCookie(c.Writer, &http.Cookie{Name: n, Value: "", Path: "/", MaxAge: -1, SameSite: http.SameSiteStrictMode})
	}
	s.mgr.Audit(c.Request.Context(), actor(c), "logout", "", "", nil)
	c.JSON(http.StatusOK, gin.H{"ok": true})
}

func abort(c *gin.Context, code int, msg string) {
	c.AbortWithStatusJSON(code, gin.H{"error": msg})
}

// Session-scoped tokens (docs/API.md, "Session-scoped tokens") are
// "sst." + session id + "." + an HMAC of the id under the server token:
// nothing is stored, they survive restarts, and they are void once the
// server token changes.
const scopedPrefix = "sst."

// ScopedToken returns the token that can act on session id only.
func (s *Server) ScopedToken(id string) string {
	return scopedPrefix + id + "." + s.derive("session-token/"+id)
}

// scopedSession returns the session of a valid scoped token.
func (s *Server) scopedSession(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, scopedPrefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ".")
	if !ok || id == "" || !equal(tok, s.ScopedToken(id)) {
		return "", false
	}
	return id, true
}

// sessionRoutes are the routes a scoped token may use, on its own session
// (the :id parameter). Every other route is refused: creating sessions,
// listing them, the audit log, issuing tokens, and any route added later.
var sessionRoutes = map[string]bool{
	"GET /session/:id":                         true,
	"POST /session/:id":                        true,
	"GET /session/:id/events":                  true,
	"GET /session/:id/shots/*name":             true,
	"GET /session/:id/screen":                  true,
	"GET /session/:id/live":                    true,
	"GET /session/:id/report/:run":             true,
	"POST /session/:id/stop":                   true,
	"POST /session/:id/takeover":               true,
	"POST /session/:id/input":                  true,
	"POST /executor/sessions/:id/call":         true,
	"GET /executor/sessions/:id/calls/:callId": true,
	"DELETE /executor/sessions/:id":            true,
}

// outOfScope says why a token scoped to session sid may not make the
// request, or "" when it may.
func (s *Server) outOfScope(c *gin.Context, sid string) string {
	route := c.Request.Method + " " + c.FullPath()
	const other = "this token is scoped to another session"
	switch {
	case sessionRoutes[route]:
		if c.Param("id") != sid {
			return other
		}
		return ""
	case route == "GET /approvals":
		if c.Query("session") != sid {
			return "this token is scoped to one session: list its approvals with ?session=" + sid
		}
		return ""
	case route == "POST /approvals/:id":
		// An unknown approval is refused like another session's, so a
		// scoped token learns nothing about other sessions.
		a, err := s.st.Approval(c.Request.Context(), c.Param("id"))
		if err != nil || a.Session != sid {
			return other
		}
		return ""
	case route == "POST /logout":
		return ""
	}
	return "a session-scoped token cannot use this route"
}

// issueToken answers POST /session/:id/token: a token scoped to the
// session, for the server token or the panel only.
func (s *Server) issueToken(c *gin.Context) {
	if _, scoped := c.Get(ctxScope); scoped {
		abort(c, http.StatusForbidden, "a session-scoped token cannot issue tokens")
		return
	}
	ss, err := s.mgr.Get(c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.mgr.Audit(c.Request.Context(), actor(c), "token_issued", ss.ID(), "", nil)
	c.JSON(http.StatusOK, gin.H{"session": ss.ID(), "token": s.ScopedToken(ss.ID())})
}

// MCP client tokens (docs/MCP.md, "Clients of spotter serve") are
// "mct." + the client's name + "." + an HMAC of the name under the server
// token: like session tokens, nothing is stored. A connection to /mcp with
// one sees and drives only the MCP sessions that client opened; the server
// token sees them all.
const mcpClientPrefix = "mct."

// mcpRoutes are the routes an MCP client token may use.
var mcpRoutes = map[string]bool{"GET /mcp": true, "POST /mcp": true, "DELETE /mcp": true}

// validClient is what an MCP client's name may be.
var validClient = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// MCPClientToken returns the token of MCP client name.
func (s *Server) MCPClientToken(name string) string {
	return mcpClientPrefix + name + "." + s.derive("mcp-client/"+name)
}

// mcpClient returns the client of a valid MCP client token.
func (s *Server) mcpClient(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, mcpClientPrefix)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, ".")
	if !ok || !validClient.MatchString(name) || !equal(tok, s.MCPClientToken(name)) {
		return "", false
	}
	return name, true
}

// issueMCPToken answers POST /mcp/tokens {"client": NAME}: a token for
// one MCP client, for the server token or the panel only.
func (s *Server) issueMCPToken(c *gin.Context) {
	_, scoped := c.Get(ctxScope)
	if _, client := c.Get(ctxMCP); scoped || client {
		abort(c, http.StatusForbidden, "a scoped token cannot issue tokens")
		return
	}
	var body struct {
		Client string `json:"client"`
	}
	if err := c.ShouldBindJSON(&body); err != nil || !validClient.MatchString(body.Client) {
		abort(c, http.StatusBadRequest, `want {"client": NAME}, a name of 1 to 64 letters, digits, "_" or "-"`)
		return
	}
	s.mgr.Audit(c.Request.Context(), actor(c), "mcp_token_issued", "", "", map[string]string{"client": body.Client})
	c.JSON(http.StatusOK, gin.H{"client": body.Client, "token": s.MCPClientToken(body.Client)})
}
