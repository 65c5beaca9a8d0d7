package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
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
	actorAPI      = "token:api"      // a client with the bearer token
	actorOperator = "operator:panel" // the panel, logged in with the token
)

const ctxActor = "spotter.actor"

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
func (s *Server) crossSite(c *gin.Context) {
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

// authenticate lets through a bearer token, or the login cookie with (on
// state-changing requests) the CSRF token.
func (s *Server) authenticate(c *gin.Context) {
	if h := c.GetHeader("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || !equal(strings.TrimSpace(tok), s.token) {
			abort(c, http.StatusUnauthorized, "bad credentials")
			return
		}
		c.Set(ctxActor, actorAPI)
		c.Next()
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
	c.Next()
}

func actor(c *gin.Context) string { return c.GetString(ctxActor) }

// login checks the token a person typed into the panel and sets the
// cookies.
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
		s.mgr.Audit(c, "anonymous", "login_failed", "", "", map[string]string{"remote": c.ClientIP()})
		abort(c, http.StatusUnauthorized, "bad token")
		return
	}
	secure := c.Request.TLS != nil
	http.SetCookie(c.Writer, &http.Cookie{Name: cookieAuth, Value: s.derive("auth"), Path: "/", HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteStrictMode})
	http.SetCookie(c.Writer, &http.Cookie{Name: cookieCSRF, Value: s.derive("csrf"), Path: "/",
		Secure: secure, SameSite: http.SameSiteStrictMode})
	s.mgr.Audit(c, actorOperator, "login", "", "", map[string]string{"remote": c.ClientIP()})
	c.JSON(http.StatusOK, gin.H{"ok": true, "csrf": s.derive("csrf")})
}

// logout clears the cookies. The cookie values derive from the token, so
// they stay valid elsewhere until the token changes.
func (s *Server) logout(c *gin.Context) {
	for _, n := range []string{cookieAuth, cookieCSRF} {
		http.SetCookie(c.Writer, &http.Cookie{Name: n, Value: "", Path: "/", MaxAge: -1, SameSite: http.SameSiteStrictMode})
	}
	s.mgr.Audit(c, actor(c), "logout", "", "", nil)
	c.JSON(http.StatusOK, gin.H{"ok": true})
}

func abort(c *gin.Context, code int, msg string) {
	c.AbortWithStatusJSON(code, gin.H{"error": msg})
}
