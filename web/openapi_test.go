package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/spotter-harness/spotter/docs"
)

// Every Server the package's tests make checks each request it is sent
// and each answer it gives against docs/openapi.yaml, with kin-openapi's
// openapi3filter (the answers' objects are closed there, so a field the
// server sends and the spec lacks is a violation):
//
//   - a request to a route the spec lacks must be answered 404 or 405;
//   - a request the spec refuses must be answered 4xx;
//   - every answer must be one the spec gives for its route and status,
//     event streams event by event.
//
// Violations are reported by the test whose env served them (env.stop),
// and any left over fail the whole run (TestMain).
func init() { testHandler = specChecked }

// The spec, loaded once; nil with specErr when it does not load or
// validate (every request is then a violation saying why).
var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

func loadSpec() (routers.Router, error) {
	specOnce.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/event-stream", decodeSSE)
		// Assets, screenshots and the spec itself: checked for their
		// route, status and media type.
		for _, ct := range []string{"text/html", "text/javascript", "text/css", "image/svg+xml", "image/png",
			"image/jpeg", "image/webp", "application/yaml"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
		l := openapi3.NewLoader()
		doc, err := l.LoadFromData(docs.OpenAPI)
		if err != nil {
			specErr = fmt.Errorf("load docs/openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(l.Context); err != nil {
			specErr = fmt.Errorf("docs/openapi.yaml does not validate: %w", err)
			return
		}
		doc.Servers = nil // the tests' servers listen anywhere on loopback
		specRouter, specErr = gorillamux.NewRouter(doc)
	})
	return specRouter, specErr
}

// checkers hold each Server's exchanges until they are checked, and the
// violations found. Exchanges are checked when the test reports them
// (env.stop, TestMain), or in the background once a server has kept
// checkBatch bytes of them: a check never competes for the machine with
// the requests of a test that times them, unless the test holds that much.
var checkers = struct {
	sync.Mutex
	by map[*Server]*checker
}{by: map[*Server]*checker{}}

const checkBatch = 32 << 20

type checker struct {
	mu       sync.Mutex
	queue    []exchange
	bytes    int
	found    []string
	checking sync.WaitGroup
}

// exchange is one request and its answer, as the server saw them.
type exchange struct {
	req *http.Request
	in  *recordedBody
	rec *recorder
}

func checkerOf(s *Server) *checker {
	checkers.Lock()
	defer checkers.Unlock()
	c := checkers.by[s]
	if c == nil {
		c = &checker{}
		checkers.by[s] = c
	}
	return c
}

// add keeps ex, and starts checking what is kept once it is large.
func (c *checker) add(ex exchange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, ex)
	c.bytes += ex.in.buf.Len() + ex.rec.body.Len()
	if c.bytes >= checkBatch {
		q := c.queue
		c.queue, c.bytes = nil, 0
		c.checking.Go(func() { c.check(q) })
	}
}

func (c *checker) check(q []exchange) {
	for _, ex := range q {
		if err := checkExchange(ex.req, ex.in, ex.rec); err != nil {
			c.mu.Lock()
			c.found = append(c.found, fmt.Sprintf("%s %s = %d: %v", ex.req.Method, ex.req.URL.RequestURI(), ex.rec.code(), err))
			c.mu.Unlock()
		}
	}
}

// report checks what is left and returns every violation found.
func (c *checker) report() []string {
	c.checking.Wait()
	c.mu.Lock()
	q := c.queue
	c.queue, c.bytes = nil, 0
	c.mu.Unlock()
	c.check(q)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.found
}

// maxChecked bounds what is kept of a body to check it: past it (long
// event streams), the body is not checked.
const maxChecked = 64 << 20

func specChecked(s *Server, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := &recordedBody{ReadCloser: r.Body}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = in
		} else {
			in.eof = true
		}
		rec := &recorder{ResponseWriter: w}
		// What the check needs of the request, before the handler
		// changes it (gin rewrites nothing, but handlers may read
		// headers set by middleware).
		req := r.Clone(context.WithoutCancel(r.Context()))
		c := checkerOf(s)
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil && (rec.status == 499 || rec.status == 0) {
			return // the client left: nobody reads the answer
		}
		c.add(exchange{req, in, rec})
	})
}

// checkExchange checks one request and its answer against the spec.
func checkExchange(r *http.Request, in *recordedBody, rec *recorder) error {
	router, err := loadSpec()
	if err != nil {
		return err
	}
	status := rec.code()
	route, params, err := router.FindRoute(r)
	if err != nil {
		// Not in the spec: only a JSON refusal is allowed.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("the route is not in docs/openapi.yaml (%v), yet the server answered %d", err, status)
		}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(rec.body.Bytes(), &e) != nil || e.Error == "" {
			return fmt.Errorf("an unknown route's answer is not a JSON error: %.200q", rec.body.Bytes())
		}
		return nil
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
		ExcludeRequestBody:    !in.eof || in.over,
		ExcludeResponseBody:   rec.over,
	}
	// What the handler read; when it did not read it all (a refusal before
	// the body), the body is not checked, and the rest of the request is.
	r.Body = io.NopCloser(bytes.NewReader(in.buf.Bytes()))
	reqIn := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), reqIn)
	var errs []error
	if reqErr != nil && (status < 400 || status >= 500) {
		errs = append(errs, fmt.Errorf("the spec refuses the request (%v), yet the server answered %d", short(reqErr), status))
	}
	body := rec.body.Bytes()
	if rec.header.Get("Content-Type") == "text/event-stream" {
		body = completeEvents(body)
	}
	respIn := &openapi3filter.ResponseValidationInput{RequestValidationInput: reqIn, Status: status,
		Header: rec.header, Options: opts}
	respIn.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), respIn); err != nil {
		errs = append(errs, fmt.Errorf("the answer does not match the spec: %v (body %.300q)", short(err), body))
	}
	return errors.Join(errs...)
}

// short clips a validator's error, which may quote a whole screenshot.
func short(err error) string {
	s := err.Error()
	if len(s) > 1500 {
		s = s[:1500] + "..."
	}
	return s
}

// recordedBody keeps what the handler reads of a request's body.
type recordedBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	eof  bool // the handler read it all
	over bool // past maxChecked
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.buf.Len()+n > maxChecked {
		b.over = true
	} else {
		b.buf.Write(p[:n])
	}
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// recorder keeps the status, headers and body of an answer while passing
// them on.
type recorder struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
	over   bool
}

func (w *recorder) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.body.Len()+len(b) > maxChecked {
		w.over = true
	} else {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// completeEvents cuts an event stream after its last whole event: a
// stream the client left may end in the middle of one.
func completeEvents(b []byte) []byte {
	if i := bytes.LastIndex(b, []byte("\n\n")); i >= 0 {
		return b[:i+2]
	}
	return nil
}

// decodeSSE reads Server-Sent Events as the spec describes a stream: an
// array of {id, event, data}, with data decoded from JSON and a numeric
// id as a number. Comments are left out.
func decodeSSE(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	var out []any
	ev := map[string]any{}
	var data []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), maxChecked)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 || len(ev) > 0 {
				if len(data) > 0 {
					var v any
					d := strings.Join(data, "\n")
					if err := json.Unmarshal([]byte(d), &v); err != nil {
						return nil, fmt.Errorf("event data is not JSON: %.200q", d)
					}
					ev["data"] = v
				}
				out = append(out, ev)
			}
			ev, data = map[string]any{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			data = append(data, value)
		case "id":
			if n, err := strconv.ParseInt(value, 10, 64); err == nil {
				ev["id"] = n
			} else {
				ev["id"] = value
			}
		case "event", "retry":
			ev[field] = value
		default:
			return nil, fmt.Errorf("unknown event field %q", field)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out, sc.Err()
}

// takeViolations checks what is left of s's exchanges and returns its
// violations; s is forgotten.
func takeViolations(s *Server) []string {
	c := checkerOf(s)
	checkers.Lock()
	delete(checkers.by, s)
	checkers.Unlock()
	return c.report()
}

// leftViolations does the same for every Server not yet reported.
func leftViolations() []string {
	checkers.Lock()
	cs := slices.Collect(maps.Values(checkers.by))
	clear(checkers.by)
	checkers.Unlock()
	var all []string
	for _, c := range cs {
		all = append(all, c.report()...)
	}
	slices.Sort(all)
	return all
}

// TestSpecLoads: docs/openapi.yaml loads and validates as OpenAPI 3.1, and
// names every route the server registers.
func TestSpecLoads(t *testing.T) {
	if _, err := loadSpec(); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi: %s, want 3.1.x", doc.OpenAPI)
	}
	s := &Server{}
	e := s.routes()
	for _, r := range e.Routes() {
		p := specPath(r.Path)
		item := doc.Paths.Find(p)
		if item == nil || item.GetOperation(r.Method) == nil {
			t.Errorf("%s %s (%s in the spec) is served but not in docs/openapi.yaml", r.Method, r.Path, p)
		}
	}
}

// specPath turns a gin route into the spec's path: ":id" is "{id}", and
// the screenshots' "*name" is the trace's layout, turn/shots/file.
func specPath(p string) string {
	p = strings.ReplaceAll(p, "*name", "{turn}/shots/{file}")
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}
