package egress

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// DefaultDialTimeout bounds the connection to an upstream host.
const DefaultDialTimeout = 10 * time.Second

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeyMethod    = "method"
	logKeyHost      = "host"
	logKeyPort      = "port"
	logKeyRule      = "rule"
	logKeyReason    = "reason"
	logKeyErr       = "err"
)

// Config configures a Proxy.
type Config struct {
	// Policy decides which hosts may be reached.
	Policy Policy
	// OnDecision, if not nil, receives every decision, so that a trace can
	// record it. It is called from the proxy's connection goroutines,
	// possibly at the same time, and should return quickly.
	OnDecision func(Decision)
	// Logger receives a record per decision: refusals at Info, allowed
	// requests at Debug. Nil means slog.Default().
	Logger *slog.Logger
	// DialTimeout bounds each upstream connection; 0 means
	// DefaultDialTimeout.
	DialTimeout time.Duration
}

// Decision is the proxy's answer to one request.
type Decision struct {
	Time    time.Time `json:"time"`
	Method  string    `json:"method"` // CONNECT for HTTPS and WebSockets, else the HTTP method
	Host    string    `json:"host"`   // normalized: lower-case ASCII name or canonical IP address
	Port    string    `json:"port"`
	Allowed bool      `json:"allowed"`
	// Rule is the Policy entry that decided, or "" when none matched.
	Rule string `json:"rule,omitempty"`
	// Reason says why a request was refused, as the refusal page says it.
	Reason string `json:"reason,omitempty"`
}

// Proxy is an HTTP forward proxy that enforces a Policy: plain HTTP
// requests in absolute form, and CONNECT tunnels for HTTPS and WebSockets.
// A refused request gets a 403 response whose body says why ("spotter
// egress: evil.test is not in this session's allowlist"). A Proxy is safe
// for concurrent use.
type Proxy struct {
	cfg   Config
	rules rules
	log   *slog.Logger
	rp    *httputil.ReverseProxy
	tr    *http.Transport

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup // tunnel goroutines
}

// New checks cfg's policy and returns a proxy. It serves nothing until
// Serve.
func New(cfg Config) (*Proxy, error) {
	r, err := cfg.Policy.compile()
	if err != nil {
		return nil, fmt.Errorf("egress policy: %w", err)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.DialTimeout = cmp.Or(cfg.DialTimeout, DefaultDialTimeout)
	p := &Proxy{
		cfg:     cfg,
		rules:   r,
		log:     cfg.Logger.With(logKeyComponent, "egress"),
		tunnels: map[net.Conn]struct{}{},
	}
	p.tr = &http.Transport{
		Proxy:                 nil,
		DialContext:           p.dial,
		MaxIdleConns:          32,
		IdleConnTimeout:       30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		// The outbound request keeps the inbound absolute URL and Host.
		Rewrite:       func(*httputil.ProxyRequest) {},
		Transport:     p.tr,
		FlushInterval: -1,
		ErrorHandler:  p.upstreamError,
		ErrorLog:      slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// Serve accepts proxy connections on ln until ctx is done, then closes ln,
// every connection and every tunnel, and returns nil. It returns an error
// if ln fails first. When Serve returns, the goroutines of its connections
// and tunnels have ended.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	cerr := srv.Close()
	if err == nil {
		<-served
	}
	p.closeTunnels()
	p.tr.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("egress proxy: %w", errors.Join(err, cerr))
	}
	return nil
}

// closeTunnels ends every tunnel and waits for their goroutines.
func (p *Proxy) closeTunnels() {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// ServeHTTP handles one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		refuse(w, http.StatusBadRequest, fmt.Sprintf("%s %s is not a proxy request (want an absolute http:// URL, or CONNECT)", r.Method, clip(r.RequestURI)))
		return
	}
	host, port := r.URL.Hostname(), cmp.Or(r.URL.Port(), "80")
	d, v, ok := p.decide(r.Method, "http", host, port)
	if !ok {
		p.record(d)
		refuse(w, http.StatusForbidden, d.Reason)
		return
	}
	ctx := context.WithValue(r.Context(), exactKey{}, v.exact)
	p.rp.ServeHTTP(&recorder{ResponseWriter: w, p: p, d: d}, r.WithContext(ctx))
}

// recorder records an allowed decision once the upstream has answered, or
// leaves it to upstreamError.
type recorder struct {
	http.ResponseWriter
	p    *Proxy
	d    Decision
	done bool
}

func (rw *recorder) WriteHeader(code int) {
	if !rw.done {
		rw.done = true
		rw.p.record(rw.d)
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if !rw.done {
		rw.WriteHeader(http.StatusOK)
	}
	return rw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// protocol upgrades).
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// upstreamError answers a request whose upstream could not be reached.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	rw, _ := w.(*recorder)
	var ie *internalError
	if errors.As(err, &ie) {
		if rw != nil {
			rw.d.Allowed, rw.d.Reason = false, ie.Error()
			rw.done = true
			p.record(rw.d)
		}
		refuse(w, http.StatusForbidden, ie.Error())
		return
	}
	if rw != nil && !rw.done {
		rw.done = true
		p.record(rw.d)
	}
	if errors.Is(err, context.Canceled) {
		return // the browser went away
	}
	p.log.Info("upstream", logKeyHost, r.URL.Host, logKeyErr, err)
	refuse(w, http.StatusBadGateway, fmt.Sprintf("could not reach %s: %v", r.URL.Host, err))
}

// connect handles CONNECT: it checks the policy, dials the upstream and
// copies bytes both ways until either side closes.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		refuse(w, http.StatusBadRequest, fmt.Sprintf("CONNECT %s: want host:port", clip(r.Host)))
		return
	}
	d, v, ok := p.decide(r.Method, "", host, port)
	if !ok {
		p.record(d)
		refuse(w, http.StatusForbidden, d.Reason)
		return
	}
	ctx := context.WithValue(r.Context(), exactKey{}, v.exact)
	up, err := p.dial(ctx, "tcp", net.JoinHostPort(host, port))
	var ie *internalError
	if errors.As(err, &ie) {
		d.Allowed, d.Reason = false, ie.Error()
		p.record(d)
		refuse(w, http.StatusForbidden, d.Reason)
		return
	}
	p.record(d)
	if err != nil {
		p.log.Info("upstream", logKeyHost, r.Host, logKeyErr, err)
		refuse(w, http.StatusBadGateway, fmt.Sprintf("could not reach %s: %v", r.Host, err))
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		refuse(w, http.StatusInternalServerError, "cannot tunnel on this connection")
		return
	}
	if !p.track(conn, up) {
		conn.Close()
		up.Close()
		return
	}
	defer p.untrack(conn, up)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// The client may have sent its first bytes with the request.
		io.Copy(up, brw.Reader)
		closeWrite(up)
	}()
	io.Copy(conn, up)
	closeWrite(conn)
}

// track registers a tunnel's connections so that Serve can close them. It
// reports false if the proxy is closing.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	p.wg.Add(1)
	return true
}

// untrack closes a tunnel's connections.
func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		c.Close()
		delete(p.tunnels, c)
	}
	p.mu.Unlock()
	p.wg.Done()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// decide applies the policy to a request for host and port, reached by
// scheme ("http", or "" for a CONNECT tunnel).
func (p *Proxy) decide(method, scheme, host, port string) (Decision, verdict, bool) {
	d := Decision{Time: time.Now(), Method: method, Host: host, Port: port}
	h, err := actions.NormalizeHost(host)
	if err != nil {
		d.Reason = err.Error()
		return d, verdict{}, false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		d.Reason = fmt.Sprintf("bad port %q", clip(port))
		return d, verdict{}, false
	}
	d.Host, d.Port = h, strconv.Itoa(n)
	v := p.rules.decide(scheme, d.Host, d.Port)
	d.Allowed, d.Rule, d.Reason = v.allowed, v.rule, v.reason
	return d, v, v.allowed
}

// record logs d and hands it to OnDecision.
func (p *Proxy) record(d Decision) {
	if d.Allowed {
		metricAllowed.Inc()
		p.log.Debug("egress allowed", logKeyMethod, d.Method, logKeyHost, d.Host, logKeyPort, d.Port, logKeyRule, d.Rule)
	} else {
		metricRefused.Inc()
		p.log.Info("egress refused", logKeyMethod, d.Method, logKeyHost, d.Host, logKeyPort, d.Port, logKeyReason, d.Reason)
	}
	if p.cfg.OnDecision != nil {
		p.cfg.OnDecision(d)
	}
}

// exactKey carries, in a request's context, whether the Allow entry that
// admitted it names the host exactly.
type exactKey struct{}

// internalError refuses a connection to an internal address that only an
// exact Allow entry may reach, or to an address a Deny entry names.
type internalError struct {
	host string
	addr netip.Addr
	deny string // the Deny entry that names addr, if that is why
}

func (e *internalError) Error() string {
	if e.deny != "" {
		return fmt.Sprintf("%s resolves to %s, which is in this session's denylist (%s)", e.host, e.addr, e.deny)
	}
	return fmt.Sprintf("%s resolves to %s, an internal address, which only an exact allowlist entry reaches (not \"*\" or \"*.domain\")", e.host, e.addr)
}

// dial connects to addr, refusing internal addresses unless the request's
// Allow entry was exact, and addresses a Deny entry names. The check runs
// on the address actually dialed, after name resolution, so a name cannot
// be re-pointed between check and use.
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	exact, _ := ctx.Value(exactKey{}).(bool)
	host, _, _ := net.SplitHostPort(addr)
	d := net.Dialer{
		Timeout: p.cfg.DialTimeout,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial %s: unexpected address %q", host, address)
			}
			if internal(ap.Addr()) && !exact {
				return &internalError{host: host, addr: ap.Addr().Unmap()}
			}
			if rule, ok := p.rules.deniesAddr(ap); ok {
				return &internalError{host: host, addr: ap.Addr().Unmap(), deny: rule}
			}
			return nil
		},
	}
	return d.DialContext(ctx, network, addr)
}

// refuse writes a short HTML page that a model reading the screenshot
// understands.
func refuse(w http.ResponseWriter, code int, reason string) {
	msg := "spotter egress: " + reason
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Spotter-Egress", "refused")
	w.WriteHeader(code)
	fmt.Fprintf(w, refusalPage, html.EscapeString(msg))
}

const refusalPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Blocked by Spotter</title>
<style>body{font:20px/1.4 sans-serif;margin:48px;color:#222}h1{font-size:24px}</style></head>
<body><h1>Blocked by Spotter</h1><p id="reason">%s</p></body></html>
`
