package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/docs"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/store"
)

// Route is one route of the server, for docs and tests.
type Route struct{ Method, Path string }

// Routes lists every route that needs credentials.
var Routes = []Route{
	{"GET", "/sessions"},
	{"PUT", "/session"},
	{"GET", "/session/:id"},
	{"POST", "/session/:id"},
	{"GET", "/session/:id/events"},
	{"GET", "/session/:id/shots/*name"},
	{"GET", "/session/:id/screen"},
	{"GET", "/session/:id/live"},
	{"GET", "/session/:id/report/:run"},
	{"POST", "/session/:id/stop"},
	{"POST", "/session/:id/takeover"},
	{"POST", "/session/:id/input"},
	{"POST", "/session/:id/token"},
	{"GET", "/approvals"},
	{"POST", "/approvals/:id"},
	{"GET", "/audit"},
	{"POST", "/logout"},
	{"POST", "/executor/sessions"},
	{"POST", "/executor/sessions/:id/call"},
	{"GET", "/executor/sessions/:id/calls/:callId"},
	{"DELETE", "/executor/sessions/:id"},
	{"GET", "/mcp"},
	{"POST", "/mcp"},
	{"DELETE", "/mcp"},
	{"POST", "/mcp/tokens"},
}

// maxWait bounds the long-poll of executor calls.
const maxWait = 10 * time.Minute

// Retry-After of the answers to a session refused at MaxSessions (503) and
// of an executor call refused past MaxQueuedCalls (429).
const (
	retryAfterSessions = 30 * time.Second
	retryAfterCalls    = 2 * time.Second
)

func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	s.cop = http.NewCrossOriginProtection()
	e := gin.New()
	e.Use(s.answer, s.observe, s.crossSite)
	e.HandleMethodNotAllowed = true
	e.NoMethod(func(c *gin.Context) { abort(c, http.StatusMethodNotAllowed, "method not allowed") })
	e.NoRoute(s.static)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/openapi.yaml", s.openapi)
	e.GET("/login", s.static)
	e.POST("/login", s.login)
	e.GET("/auth", s.authState)

	handlers := map[string]gin.HandlerFunc{
		"GET /sessions":                            s.listSessions,
		"PUT /session":                             s.createSession,
		"GET /session/:id":                         s.history,
		"POST /session/:id":                        s.postSession,
		"GET /session/:id/events":                  s.events,
		"GET /session/:id/shots/*name":             s.shot,
		"GET /session/:id/screen":                  s.screen,
		"GET /session/:id/live":                    s.live,
		"GET /session/:id/report/:run":             s.report,
		"POST /session/:id/stop":                   s.stop,
		"POST /session/:id/takeover":               s.takeover,
		"POST /session/:id/input":                  s.input,
		"POST /session/:id/token":                  s.issueToken,
		"GET /approvals":                           s.listApprovals,
		"POST /approvals/:id":                      s.decide,
		"GET /audit":                               s.audit,
		"POST /logout":                             s.logout,
		"POST /executor/sessions":                  s.execCreate,
		"POST /executor/sessions/:id/call":         s.execCall,
		"GET /executor/sessions/:id/calls/:callId": s.execResult,
		"DELETE /executor/sessions/:id":            s.execDelete,
		"GET /mcp":                                 s.serveMCP,
		"POST /mcp":                                s.serveMCP,
		"DELETE /mcp":                              s.serveMCP,
		"POST /mcp/tokens":                         s.issueMCPToken,
	}
	auth := e.Group("/", s.authenticate, s.route)
	for _, r := range Routes {
		auth.Handle(r.Method, r.Path, handlers[r.Method+" "+r.Path])
	}
	return e
}

// static serves the panel's assets, which hold no data, to anyone; every
// other unknown path is a JSON 404.
func (s *Server) static(c *gin.Context) {
	if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
		abort(c, http.StatusNotFound, "not found")
		return
	}
	name := strings.TrimPrefix(path.Clean(c.Request.URL.Path), "/")
	if name == "" || name == "login" {
		name = "index.html"
	}
	b, err := fs.ReadFile(s.assets, name)
	if err != nil {
		abort(c, http.StatusNotFound, "not found")
		return
	}
	ct := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}[path.Ext(name)]
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, ct, b)
}

// openapi serves docs/openapi.yaml, the contract of these routes; like the
// panel's assets it holds no data.
func (s *Server) openapi(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "application/yaml", docs.OpenAPI)
}

// fail answers err: only the packages' sentinels reach the client as text;
// anything else is logged and answered "internal error".
func (s *Server) fail(c *gin.Context, err error) {
	var mbe *http.MaxBytesError
	code, msg := http.StatusInternalServerError, "internal error"
	switch {
	case errors.As(err, &mbe):
		code, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBody)
	case errors.Is(err, session.ErrBadRequest), errors.Is(err, errBadJSON):
		code, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, session.ErrRefused):
		code, msg = http.StatusForbidden, err.Error()
	case errors.Is(err, session.ErrNotFound), errors.Is(err, store.ErrNotFound):
		code, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, session.ErrGone):
		code, msg = http.StatusGone, err.Error()
	case errors.Is(err, session.ErrTooManySessions):
		// The server is at capacity: a session that stops makes room.
		c.Header("Retry-After", strconv.Itoa(int(retryAfterSessions/time.Second)))
		code, msg = http.StatusServiceUnavailable, err.Error()
	case errors.Is(err, session.ErrTooManyCalls):
		c.Header("Retry-After", strconv.Itoa(int(retryAfterCalls/time.Second)))
		code, msg = http.StatusTooManyRequests, err.Error()
	case errors.Is(err, session.ErrConflict), errors.Is(err, store.ErrConflict), errors.Is(err, session.ErrNoTakeover):
		code, msg = http.StatusConflict, err.Error()
	case errors.Is(err, context.Canceled) && (c.Request.Context().Err() == nil || s.draining.Load() || s.closing.Load()):
		// Not the client's doing: the session stopped under the request,
		// as a draining replica stops its sessions (and its server's
		// requests) to hand them over. Another replica answers the same
		// request again (a call id's result once).
		unavailable(c, time.Second, "the session was stopped while answering, to be handed over to another replica; try again")
		return
	case errors.Is(err, context.Canceled):
		code, msg = 499, "request canceled"
	case errors.Is(err, os.ErrDeadlineExceeded):
		code, msg = http.StatusRequestTimeout, fmt.Sprintf("the request did not arrive within %v", s.cfg.HTTP.ReadTimeout)
	default:
		s.log.ErrorContext(c.Request.Context(), "request failed", "method", c.Request.Method, "path", c.FullPath(), "err", err)
	}
	abort(c, code, msg)
}

var errBadJSON = errors.New("bad JSON body")

// bind decodes a JSON body strictly.
func bind(c *gin.Context, v any) error {
	dec := json.NewDecoder(c.Request.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body", errBadJSON)
		}
		return fmt.Errorf("%w: %s", errBadJSON, jsonProblem(err))
	}
	return nil
}

// jsonProblem says what is wrong with a body in the API's words, not Go's:
// a field of the wrong type is named with the JSON type it needs.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s: a JSON %s is not allowed here, want %s", field, te.Value, jsonKind(te.Type.Kind()))
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON type a Go kind decodes from.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

func (s *Server) session(c *gin.Context) (*session.Session, bool) {
	ss, err := s.mgr.Get(c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	return ss, true
}

func (s *Server) listSessions(c *gin.Context) {
	recs, err := s.mgr.Sessions(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	for i := range recs {
		recs[i].State = nil
	}
	if recs == nil {
		recs = []store.Session{}
	}
	c.JSON(http.StatusOK, gin.H{"sessions": recs})
}

func (s *Server) createSession(c *gin.Context) {
	var spec session.Spec
	if err := bind(c, &spec); err != nil {
		s.fail(c, err)
		return
	}
	ss, err := s.mgr.Create(c.Request.Context(), session.KindAgent, spec, actor(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("X-Session-Id", ss.ID())
	s.stream(c, ss, 0, true)
}

func (s *Server) postSession(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	var body struct {
		Messages []session.InMessage `json:"messages"`
	}
	if err := bind(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	after := ss.LastSeq()
	if err := ss.Post(c.Request.Context(), body.Messages, actor(c)); err != nil {
		s.fail(c, err)
		return
	}
	s.stream(c, ss, after, true)
}

func (s *Server) history(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	h, err := ss.History(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h)
}

func (s *Server) events(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	after := c.Query("after")
	if after == "" {
		after = c.GetHeader("Last-Event-ID")
	}
	var n int64
	if after != "" {
		var err error
		if n, err = strconv.ParseInt(after, 10, 64); err != nil || n < 0 {
			abort(c, http.StatusBadRequest, "after: want a sequence number")
			return
		}
	}
	s.stream(c, ss, n, false)
}

// stream writes the session's events after seq after as SSE. With
// untilStop it ends after the next turn_stop (or at once when no run is
// going and everything was sent); otherwise it follows until the client
// leaves. The client leaving never stops the session.
func (s *Server) stream(c *gin.Context, ss *session.Session, after int64, untilStop bool) {
	w, ping := startSSE(c)
	defer ping.Stop()
	for {
		evs, changed := ss.Events(after)
		for _, e := range evs {
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, timed(e.Data, e.Time))
			after = e.Seq
			if untilStop && e.Type == session.EventTurnStop {
				w.Flush()
				return
			}
		}
		w.Flush()
		if untilStop && !ss.Busy() {
			// Nothing runs, so no turn_stop is coming unless it was
			// emitted already (finish emits it before Busy turns false).
			if more, _ := ss.Events(after); len(more) == 0 {
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			w.Flush()
		case <-c.Request.Context().Done():
			return
		}
	}
}

// startSSE answers c with an SSE stream, its headers sent, and returns
// its writer and the ticker of its keep-alive comments (": ping"), which
// the caller stops.
func startSSE(c *gin.Context) (gin.ResponseWriter, *time.Ticker) {
	w := c.Writer
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	return w, time.NewTicker(15 * time.Second)
}

// timed returns an event's data, a JSON object, with the time the event
// was stored as its "time" member (RFC 3339, UTC), so that a stream
// replayed later says when each event happened.
func timed(data []byte, at time.Time) []byte {
	if at.IsZero() || len(data) < 2 || data[0] != '{' {
		return data
	}
	t, err := at.UTC().MarshalJSON()
	if err != nil {
		return data
	}
	out := make([]byte, 0, len(data)+len(t)+9)
	out = append(out, `{"time":`...)
	out = append(out, t...)
	if rest := bytes.TrimSpace(data[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, data[1:]...)
}

func (s *Server) shot(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	name := strings.TrimPrefix(c.Param("name"), "/")
	clean := path.Clean(name)
	ct := shotTypes[path.Ext(clean)]
	if clean != name || strings.HasPrefix(clean, "..") || !strings.Contains(clean, "/shots/") || ct == "" {
		abort(c, http.StatusNotFound, "no such screenshot")
		return
	}
	f, err := os.Open(filepath.Join(ss.Dir(), filepath.FromSlash(clean)))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.ErrorContext(c.Request.Context(), "open screenshot", "session", ss.ID(), "name", clean, "err", err)
		}
		abort(c, http.StatusNotFound, "no such screenshot")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		abort(c, http.StatusNotFound, "no such screenshot")
		return
	}
	c.Header("Content-Type", ct)
	c.Header("Cache-Control", "private, max-age=86400, immutable")
	c.Header("X-Content-Type-Options", "nosniff")
	// ServeContent's own error answers (a bad Range) become JSON in answer.
	http.ServeContent(c.Writer, c.Request, "", fi.ModTime(), f)
}

// shotTypes are the Content-Types of the screenshots a trace holds.
var shotTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}

func (s *Server) screen(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	shot, ok := ss.Shot()
	if !ok {
		abort(c, http.StatusNotFound, "no screenshot yet")
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "image/"+string(shot.Frame.Format), shot.Data)
}

func (s *Server) stop(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	if err := ss.Stop(c.Request.Context(), actor(c)); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "stopping"})
}

func (s *Server) takeover(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	var body struct {
		Active *bool `json:"active"`
	}
	if err := bind(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	if body.Active == nil {
		abort(c, http.StatusBadRequest, "active is required")
		return
	}
	if err := ss.Takeover(c.Request.Context(), *body.Active, actor(c)); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"active": *body.Active})
}

func (s *Server) input(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	var a actions.Action
	if err := bind(c, &a); err != nil {
		s.fail(c, err)
		return
	}
	shot, err := ss.Input(c.Request.Context(), a, actor(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"screenshot": shotJSON(shot.Data, string(shot.Frame.Format)), "frame": shot.Frame})
}

func shotJSON(data []byte, format string) gin.H {
	return gin.H{"mimeType": "image/" + format, "data": base64.StdEncoding.EncodeToString(data)}
}

func (s *Server) listApprovals(c *gin.Context) {
	as, err := s.st.Approvals(c, store.ApprovalFilter{Session: c.Query("session"), Status: c.Query("status")})
	if err != nil {
		s.fail(c, err)
		return
	}
	if as == nil {
		as = []store.Approval{}
	}
	c.JSON(http.StatusOK, gin.H{"approvals": as})
}

func (s *Server) decide(c *gin.Context) {
	var d session.Decision
	if err := bind(c, &d); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.mgr.Decide(c.Request.Context(), c.Param("id"), d, actor(c)); err != nil {
		s.fail(c, err)
		return
	}
	a, err := s.st.Approval(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, a)
}

func (s *Server) audit(c *gin.Context) {
	log, err := s.st.AuditLog(c, c.Query("session"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if log == nil {
		log = []store.Audit{}
	}
	c.JSON(http.StatusOK, gin.H{"audit": log})
}

func (s *Server) execCreate(c *gin.Context) {
	var spec session.Spec
	if err := bind(c, &spec); err != nil {
		s.fail(c, err)
		return
	}
	ss, err := s.mgr.Create(c.Request.Context(), session.KindExecutor, spec, actor(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	shot, err := ss.First(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	// image is the size of every screenshot the client gets, and the space
	// its calls' coordinates are in (Gemini's grid spans it).
	c.JSON(http.StatusOK, gin.H{"id": ss.ID(), "image": ss.Spec().Image(), "screenshot": shotJSON(shot.Data, string(shot.Frame.Format)),
		"frame": shot.Frame})
}

func waitOf(c *gin.Context) (time.Duration, error) {
	q := c.Query("wait")
	if q == "" {
		return 60 * time.Second, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil {
		if n, nerr := strconv.Atoi(q); nerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: wait %q: want a duration such as 30s", session.ErrBadRequest, q)
	}
	return min(d, maxWait), nil
}

func (s *Server) execCall(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	wait, err := waitOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !json.Valid(raw) {
		abort(c, http.StatusBadRequest, "the call is not JSON")
		return
	}
	res, err := ss.Call(c.Request.Context(), raw, wait)
	s.execAnswer(c, res, err)
}

func (s *Server) execResult(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	wait, err := waitOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := ss.CallResult(c.Request.Context(), c.Param("callId"), wait)
	s.execAnswer(c, res, err)
}

func (s *Server) execAnswer(c *gin.Context, res session.ExecResult, err error) {
	if err != nil {
		s.fail(c, err)
		return
	}
	if !res.Done {
		status := "running"
		if res.ApprovalID != "" {
			status = "pending_approval"
		}
		c.JSON(http.StatusAccepted, gin.H{"status": status, "approvalId": res.ApprovalID, "toolCallId": res.CallID})
		return
	}
	b, err := doneJSON(res)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", b)
}

// doneJSON is the answer to an executor call with its result: the object
// c.JSON would write (keys in order, HTML characters escaped), with the
// provider-native result, which holds the screenshot in base64, copied
// in as it is rather than parsed and written again. The codecs make
// res.Native and res.Message with json.Marshal, so they are not checked
// again here (a check of a 50 KB result cost 0.13 ms of each call).
func doneJSON(res session.ExecResult) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(res.Native) + len(res.Message) + 512)
	field := func(name string, v any) error {
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(`"` + name + `":`)
		if raw, ok := v.(json.RawMessage); ok {
			if len(raw) == 0 {
				return fmt.Errorf("executor result: %s is empty", name)
			}
			if needsHTMLEscape(raw) {
				json.HTMLEscape(&b, raw)
			} else {
				b.Write(raw)
			}
			return nil
		}
		e, err := json.Marshal(v)
		b.Write(e)
		return err
	}
	if res.Error != "" {
		if err := field("error", res.Error); err != nil {
			return nil, err
		}
	}
	if err := field("frame", res.Frame); err != nil {
		return nil, err
	}
	if res.Message != nil {
		if err := field("message", res.Message); err != nil {
			return nil, err
		}
	}
	if err := field("result", res.Native); err != nil {
		return nil, err
	}
	if err := field("status", "done"); err != nil {
		return nil, err
	}
	if err := field("toolCallId", res.CallID); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// needsHTMLEscape reports whether json.HTMLEscape would change raw: it
// holds <, >, & or U+2028 or U+2029. (bytes.ContainsAny with the two
// non-ASCII runes decodes raw rune by rune, 0.2 ms for a screenshot.)
func needsHTMLEscape(raw []byte) bool {
	return bytes.IndexAny(raw, "<>&") >= 0 || bytes.Contains(raw, lineSep) || bytes.Contains(raw, paraSep)
}

var lineSep, paraSep = []byte("\u2028"), []byte("\u2029")

func (s *Server) execDelete(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	if ss.Kind() != session.KindExecutor {
		abort(c, http.StatusConflict, "not an executor session")
		return
	}
	if err := ss.Stop(c.Request.Context(), actor(c)); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "stopped"})
}

// serveMCP hands /mcp to the MCP server's streamable HTTP transport:
// through the bearer check that tells it which client the token is of,
// when there is a bearer token.
func (s *Server) serveMCP(c *gin.Context) {
	if c.GetHeader("Authorization") != "" {
		s.mcpAuthH.ServeHTTP(c.Writer, c.Request)
		return
	}
	s.mcpH.ServeHTTP(c.Writer, c.Request)
}
