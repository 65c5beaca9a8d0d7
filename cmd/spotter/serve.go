package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/mcp"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/web"
)

// serveIsolateHelp is --isolate's help for serve, whose none still keeps
// browsers off internal addresses.
const serveIsolateHelp = "where sessions' browsers run: containerd (a sandbox per session), local (a host browser behind " +
	"the egress proxy, which allows only the session's hosts), none (a host browser behind the egress proxy, which allows " +
	"the public internet but no loopback, private or link-local address the session's hosts do not name), or auto " +
	"(containerd when its daemon's socket exists, else local)"

// serveCmd runs `spotter serve`: the HTTP API, the approval panel and the
// supervised sessions, until ctx is done (SIGINT, SIGTERM).
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (loopback by default)")
	data := fs.String("data", "spotter-data", "data directory: the SQLite database and the sessions' screenshots")
	db := fs.String("db", os.Getenv("SPOTTER_DATABASE_URL"), "database DSN: a postgres:// URL (default: $SPOTTER_DATABASE_URL, else SQLite in --data)")
	token := fs.String("token", "", "the API and panel token (default: $SPOTTER_TOKEN, or a random one printed at start)")
	isolation := fs.String("isolate", "auto", serveIsolateHelp)
	memory := fs.Uint64("memory", 0, "each sandbox's memory limit in MiB (containerd; 0: isolate's default)")
	warm := warmFlag(fs, 2, "")
	mcpStart := fs.String("mcp-start-url", "", "the page every MCP session (at /mcp) opens first; its host is the MCP sessions' navigation allowlist")
	browser := fs.String("browser", "", "Chromium executable (default: looked up on PATH)")
	mcpIdle := fs.Duration("mcp-idle-timeout", mcp.DefaultIdleTimeout, "close an MCP session (at /mcp) nobody has called "+
		"for this long, and an MCP client's connection that sent nothing for this long; 0: never")
	mcpDisplay := fs.String("mcp-display", "chromium", "the MCP sessions' (at /mcp) display: "+displayHelp)
	displays := fs.String("displays", "chromium", "the display backends sessions may ask for, comma-separated, of chromium, "+
		"desktop, vnc, playwright: a desktop runs the command a client names (in its sandbox under --isolate containerd, "+
		"on this host otherwise), a vnc display connects where a client says (passwords only from SPOTTER_VNC_* variables)")
	timeout := fs.Duration("approval-timeout", 0, "how long an approval waits for a human before it counts as denied (default 5m)")
	rulesFile := fs.String("rules", "", "the server's approval rules: a YAML file in the schema of package approvals "+
		"(see examples/rules/approvals.yaml), checked at start; default: the built-in rules. They apply to the MCP sessions "+
		"at /mcp and to every session whose spec brings no rules of its own (approvals.rules)")
	logs := addLogFlags(fs, "log requests and sessions' progress to stderr")
	browsers := fs.Int("browsers", 0, "share this many Chromium processes among the sessions' chromium displays, each "+
		"session a browser context of its own behind its own egress proxy (about 24 MB a session instead of 84); 0: a "+
		"browser per session. Host browsers only: --isolate local or none (auto then means local)")
	maxSessions := fs.Int("max-sessions", 0, "how many agent and executor sessions may have a browser open at once; "+
		"more are refused with 503 and Retry-After (0: from the machine's memory, about 200 MB a session; -1: no bound)")
	drain := fs.Duration("drain-timeout", 25*time.Second, "on SIGTERM or SIGINT: how long running turns get to finish before "+
		"their sessions are handed over (to the other replicas, or to the next start); keep it under the pod's "+
		"terminationGracePeriodSeconds")
	advertise := fs.String("advertise", "", "run as one replica of several sharing --db (PostgreSQL): the base URL the other "+
		"replicas reach this one at, such as http://$(POD_IP):8080 (a port of 0 stands for the port --addr listens on). "+
		"Needs --token or $SPOTTER_TOKEN, the same on every replica")
	replicaID := fs.String("replica-id", "", "with --advertise: this replica's name, unique among them (default: host name and process id)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key): clients, and the other "+
		"replicas when --advertise is https, reach this one over TLS. Read again when the file changes (a renewal)")
	tlsKey := fs.String("tls-key", "", "the private key (PEM) of --tls-cert")
	peerCA := fs.String("peer-ca", "", "with an https --advertise: the CA certificates (PEM) that sign the other replicas' "+
		"certificates, checked when forwarding to them (default: the system's roots)")
	peerName := fs.String("peer-name", "", "with an https --advertise: the name the other replicas' certificates hold "+
		"(default: the host of each one's advertised address), such as one name every replica's certificate carries")
	lease := fs.Duration("lease", web.DefaultLeaseTTL, "with --advertise: how long this replica's hold on its sessions lasts "+
		"unrenewed (renewed every third of it); the others adopt its sessions once it lapses")
	var retain web.Retention
	fs.Func("retain", "delete finished sessions (stopped, failed or idle) whole, records and files, once unchanged for an "+
		"age (30d, 12h), or oldest first while the sessions' files hold more than a size (50GB, 500MiB), or both "+
		"(30d,50GB); a deleted session answers 410. One replica at a time applies it. Default: keep everything", func(v string) error {
		r, err := web.ParseRetention(v)
		retain = r
		return err
	})
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, on a listener of its own "+
		"without credentials (no session ids or URLs are in them; keep the port to the monitoring network), such as :9090; "+
		"empty: none (docs/OPERATIONS.md)")
	var allowBase []string
	fs.Func("allow-base-url", "a model base URL (http(s)://host[:port][/path]) the server may send its own provider keys to, "+
		"besides each provider's official endpoint and the *_BASE_URL variables; repeatable. A session naming any other "+
		"base URL must send its own key (header "+web.HeaderProviderKey+")", func(v string) error {
		if err := web.CheckBaseURL(v); err != nil {
			return err
		}
		allowBase = append(allowBase, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: spotter serve [--addr 127.0.0.1:8080] [--data DIR] [--db postgres://...] [--token T] [--rules FILE] [--isolate auto] [--allow-base-url URL]... [--advertise URL]")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments: %v", fs.Args())
	}
	iso, err := sharedIsolation(*browsers, *isolation)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	for _, d := range []struct {
		flag     string
		v        time.Duration
		min, max time.Duration
	}{
		{"approval-timeout", *timeout, 0, approvals.MaxTimeout},
		{"drain-timeout", *drain, 0, time.Hour},
		{"lease", *lease, time.Second, time.Hour},
	} {
		if d.v < d.min || d.v > d.max {
			return usageError(fs, "--%s %v: want %v to %v", d.flag, d.v, d.min, d.max)
		}
	}
	var mcpRules approvals.Rules // the zero Rules are the defaults
	var serverRules *approvals.Rules
	if *rulesFile != "" {
		var err error
		if mcpRules, err = runner.LoadRules(*rulesFile); err != nil {
			return exitError{2, fmt.Errorf("--rules: %w", err)}
		}
		if *timeout > 0 {
			mcpRules.Timeout = *timeout // the command line over the file
		}
		serverRules = &mcpRules
	}
	tok := *token
	if tok == "" {
		tok = os.Getenv("SPOTTER_TOKEN")
	}
	log, err := logs.logger(stderr)
	if err != nil {
		return exitError{2, err}
	}
	host, _ := os.Hostname()
	stopTracing, tracing, err := startTracing(ctx, os.Getenv, cmp.Or(*replicaID, cmp.Or(host, "spotter")+"-"+strconv.Itoa(os.Getpid())),
		versionString(), log)
	if err != nil {
		return exitError{2, err}
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			fmt.Fprintln(stderr, "spotter: send the last spans:", err)
		}
	}()
	var metrics *metricsServer
	if *metricsAddr != "" {
		if metrics, err = listenMetrics(*metricsAddr); err != nil {
			return exitError{2, fmt.Errorf("--metrics-addr: %w", err)}
		}
		defer metrics.close()
	}

	serveTLS, peerTLS, err := replicaTLS(*tlsCert, *tlsKey, *peerCA, *peerName, *advertise)
	if err != nil {
		return exitError{2, err}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitError{2, err}
	}
	scheme := "http"
	if serveTLS != nil {
		ln, scheme = tls.NewListener(ln, serveTLS), "https"
	}
	var cluster web.ClusterConfig
	if *advertise != "" {
		adv, err := advertised(*advertise, ln.Addr())
		if err != nil {
			ln.Close()
			return exitError{2, err}
		}
		cluster = web.ClusterConfig{Advertise: adv, ReplicaID: *replicaID, LeaseTTL: *lease, PeerTLS: peerTLS}
	}
	mcpDisp, err := parseDisplay(*mcpDisplay, 1280, 800)
	if err != nil {
		ln.Close()
		return exitError{2, err}
	}
	if err := mcpDisp.CheckStartURL(*mcpStart); err != nil {
		ln.Close()
		return exitError{2, fmt.Errorf("--mcp-start-url: %w", err)}
	}
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, sbx, err := openSandboxes(startCtx, iso, *memory, *warm, log)
	if err != nil {
		cancel()
		ln.Close()
		return exitError{2, err}
	}
	if sbx != nil {
		defer sbx.Close(context.WithoutCancel(ctx))
	}
	var shared *cdp.Pool
	if *browsers > 0 {
		if shared, err = sharedBrowsers(startCtx, *browser, *browsers, log); err != nil {
			cancel()
			ln.Close()
			return exitError{2, err}
		}
		defer shared.Close(context.WithoutCancel(ctx))
	}
	srv, err := web.New(startCtx, web.Config{Addr: *addr, DataDir: *data, DB: *db, Token: tok, Sandboxes: sbx, Shared: shared,
		Browser: *browser, Getenv: os.Getenv, Logger: log, ApprovalTimeout: *timeout, Rules: serverRules, AllowBaseURLs: allowBase,
		Version: versionString(),
		MCP:     web.MCPConfig{StartURL: *mcpStart, Rules: mcpRules, Display: session.DisplayOf(mcpDisp), IdleTimeout: idleOrNever(*mcpIdle)},
		Cluster: cluster, MaxSessions: *maxSessions, Displays: splitList(*displays), Retention: retain})
	if err != nil {
		cancel()
		ln.Close()
		return exitError{2, err}
	}
	// Restoring relaunches the displays of the sessions that were open.
	err = srv.Start(startCtx)
	cancel()
	if err != nil {
		ln.Close()
		return exitError{2, errors.Join(err, srv.Close(context.WithoutCancel(ctx)))}
	}
	if metrics != nil {
		fmt.Fprintf(stdout, "spotter: metrics at http://%s/metrics\n", metrics.addr)
	}
	fmt.Fprintf(stdout, "spotter: listening on %s://%s\n", scheme, ln.Addr())
	fmt.Fprintf(stdout, "spotter: MCP (streamable HTTP) at %s://%s/mcp\n", scheme, ln.Addr())
	if tok == "" {
		fmt.Fprintf(stdout, "spotter: token %s\n", srv.Token())
	} else {
		fmt.Fprintln(stdout, "spotter: token from --token or $SPOTTER_TOKEN")
	}
	if r := srv.Replica(); r != "" {
		fmt.Fprintf(stdout, "spotter: replica %s, reached at %s\n", r, cluster.Advertise)
	}
	if tracing {
		fmt.Fprintln(stdout, "spotter: tracing to the OTLP endpoint of the OTEL_* variables")
	}

	// The HTTP server outlives the signal: while draining, the sessions
	// still running answer their clients (and the other replicas).
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	var serr error
	select {
	case serr = <-served: // it failed, or this replica lost its lease
		served = nil
	case <-ctx.Done():
		fmt.Fprintf(stderr, "spotter: draining: no new sessions; running turns get %v\n", *drain)
		dctx, cancel := context.WithTimeout(context.Background(), *drain)
		if err := srv.Drain(dctx); err != nil {
			fmt.Fprintln(stderr, "spotter: drain: turns still running are handed over:", err)
		}
		cancel()
	}
	cerr := srv.Close(context.Background())
	stopServe()
	if served != nil {
		serr = <-served
	}
	if serr != nil && !errors.Is(serr, context.Canceled) {
		return exitError{1, serr}
	}
	if cerr != nil {
		return exitError{1, cerr}
	}
	return nil
}

// idleOrNever is an --idle-timeout flag's value as mcp.Config takes it:
// 0 (never) is negative there.
func idleOrNever(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// sharedIsolation checks --browsers against --isolate (serve, mcp) and
// returns the isolation to use: shared browsers run on this host, so
// auto means local with them, and containerd is refused.
func sharedIsolation(browsers int, iso string) (string, error) {
	if err := checkIsolation(iso); err != nil {
		return "", err
	}
	switch {
	case browsers < 0:
		return "", fmt.Errorf("--browsers %d: want 0 or more", browsers)
	case browsers > 0 && iso == "auto":
		return "local", nil
	case browsers > 0 && iso != "local" && iso != "none":
		return "", fmt.Errorf("--browsers shares browsers on this host; sessions under --isolate %s run their own "+
			"(use --isolate local or none)", iso)
	}
	return iso, nil
}

// sharedBrowsers launches the n browsers of --browsers (serve, mcp). Under
// serve, each session's browser context sends its requests through the
// session's own egress proxy; the flag keeps WebRTC's UDP, which no HTTP
// proxy carries, off for them all, as a browser of its own behind the
// proxy has it (isolate/local).
func sharedBrowsers(ctx context.Context, exec string, n int, log *slog.Logger) (*cdp.Pool, error) {
	p, err := cdp.LaunchPool(ctx, cdp.Config{Exec: exec, Logger: log,
		Flags: []string{"--force-webrtc-ip-handling-policy=disable_non_proxied_udp"}}, n)
	if err != nil {
		return nil, fmt.Errorf("--browsers: %w", err)
	}
	return p, nil
}

// replicaTLS reads --tls-cert and --tls-key (the server's certificate,
// nil without them) and --peer-ca and --peer-name (how an https
// --advertise replica checks the others' certificates), and checks them
// against --advertise: a replica that advertises https serves TLS, and
// one that serves TLS advertises https.
func replicaTLS(cert, key, peerCA, peerName, advertise string) (serve, peer *tls.Config, err error) {
	https := strings.HasPrefix(advertise, "https://")
	switch {
	case (cert == "") != (key == ""):
		return nil, nil, errors.New("--tls-cert and --tls-key go together")
	case https && cert == "":
		return nil, nil, fmt.Errorf("--advertise %s is https: serve it with --tls-cert and --tls-key", advertise)
	case advertise != "" && !https && cert != "":
		return nil, nil, fmt.Errorf("--advertise %s is plain http, but this replica serves TLS (--tls-cert): advertise https", advertise)
	case !https && (peerCA != "" || peerName != ""):
		return nil, nil, errors.New("--peer-ca and --peer-name are for replicas that advertise https (--advertise https://...)")
	}
	if cert != "" {
		c, err := loadServedCert(cert, key)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		serve = &tls.Config{GetCertificate: c.get, MinVersion: tls.VersionTLS12}
	}
	if https {
		peer = &tls.Config{ServerName: peerName}
		if peerCA != "" {
			b, err := os.ReadFile(peerCA)
			if err != nil {
				return nil, nil, fmt.Errorf("--peer-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return nil, nil, fmt.Errorf("--peer-ca %s: no PEM certificate in it", peerCA)
			}
			peer.RootCAs = pool
		}
	}
	return serve, peer, nil
}

// advertised checks --advertise and puts the listener's port in place of
// a port 0.
func advertised(adv string, ln net.Addr) (string, error) {
	u, err := url.Parse(adv)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--advertise %q: want a base URL such as http://10.1.2.3:8080", adv)
	}
	if u.Port() == "0" {
		tcp, ok := ln.(*net.TCPAddr)
		if !ok {
			return "", fmt.Errorf("--advertise %q: port 0 needs a TCP listener", adv)
		}
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(tcp.Port))
	}
	u.Path = ""
	return u.String(), nil
}

// splitList splits a comma-separated flag, without spaces or empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// metricsServer serves /metrics (web.MetricsHandler) on a listener of its
// own, until close.
type metricsServer struct {
	addr string
	srv  *http.Server
	done chan struct{}
}

func listenMetrics(addr string) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", web.MetricsHandler())
	m := &metricsServer{addr: ln.Addr().String(), done: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: time.Minute}}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln) // ErrServerClosed once close shuts it down
	}()
	return m, nil
}

// close shuts the listener down, giving a scrape under way a few seconds.
func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		_ = m.srv.Close()
	}
	<-m.done
}
