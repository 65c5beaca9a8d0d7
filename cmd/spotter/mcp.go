package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/mcp"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// mcpCmd runs `spotter mcp`: an MCP server on stdio, or with --http ADDR on
// streamable HTTP at a loopback address. Each session opens the display
// --display names (wiring.OpenDisplay): by default a headless Chromium of
// its own.
func mcpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "", "serve streamable HTTP on this loopback address (e.g. 127.0.0.1:8931) instead of stdio")
	browser := fs.String("browser", "", "Chromium executable (default: chromium on PATH)")
	display := fs.String("display", "chromium", "each session's display: "+displayHelp)
	startURL := fs.String("start-url", "about:blank", "the page every new session opens")
	useDemo := fs.Bool("demo", false, "serve the built-in demo app and start sessions on it")
	policyFile := fs.String("policy", "", "policy YAML (default: every action, navigation only to the start URL's host)")
	viewport := fs.String("viewport", "1280x800", "CSS size of each session's viewport")
	imageSize := fs.String("image", "", "size of the screenshots sent back, WxH (default: the viewport's)")
	maxSessions := fs.Int("max-sessions", 8, "most sessions open at once")
	browsers := fs.Int("browsers", -1, "share this many Chromium processes among the sessions, each session a browser "+
		"context of its own behind its own egress proxy; 0: a browser per session (default: 1 for a chromium --display "+
		"under --isolate auto, local or none; 0 otherwise)")
	idle := fs.Duration("idle-timeout", mcp.DefaultIdleTimeout, "close a session nobody has called for this long "+
		"(its browser released, its record closed), and an HTTP client's connection that sent nothing for this long; 0: never")
	logs := addLogFlags(fs, "log to stderr")
	isolation := fs.String("isolate", "auto", "where sessions' displays run: containerd (a sandbox per session), local (a "+
		"host browser behind an egress proxy of the session's own), none (a host browser, no proxy), or auto (containerd "+
		"when its daemon's socket exists, else local; local with --browsers). Under containerd and local a session reaches "+
		"only the policy's hosts and the start URL's")
	memory := fs.Uint64("memory", 0, "memory limit of a containerd sandbox, in MiB (default 1024)")
	warm := warmFlag(fs, 1, "")
	approvalMode := fs.String("approvals", "", "which actions wait for a human: flagged (those the approval rules flag), "+
		"all (every action with an effect), or none (no approvals; provider safety checks are still refused). The question "+
		"goes to the client's user through MCP elicitation; a client that cannot ask has the action refused with its "+
		"rule's reason (default: the --rules file's supervise, or flagged)")
	rulesFile := fs.String("rules", "", rulesHelp)
	out := fs.String("out", "", "record each session in a directory of its own under this one, SESSION-TIME: its trace "+
		"(every call, action, result and screenshot, typed secrets masked, the egress proxy's decisions) and, once it "+
		"closes, report.html (default: no record)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: spotter mcp [--http 127.0.0.1:PORT] [flags]")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments: %v", fs.Args())
	}
	vp, err := parseSize(*viewport)
	if err != nil {
		return exitError{2, fmt.Errorf("--viewport: %w", err)}
	}
	disp, err := parseDisplay(*display, vp.W, vp.H)
	if err != nil {
		return exitError{2, err}
	}
	if *browsers < 0 {
		// A browser context each of one shared browser, unless the
		// display is not a Chromium of the host's.
		*browsers = 0
		if (disp.Backend == "" || disp.Backend == wiring.Chromium) && *isolation != "containerd" {
			*browsers = 1
		}
	}
	if *idle < 0 {
		return exitError{2, fmt.Errorf("--idle-timeout %v: want 0 (never) or more", *idle)}
	}
	idleTimeout := idleOrNever(*idle)
	iso, err := sharedIsolation(*browsers, *isolation)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if *browsers > 0 && disp.Backend != "" && disp.Backend != wiring.Chromium {
		return exitError{2, fmt.Errorf("--browsers shares Chromium processes: it needs --display chromium, not %s", disp.Backend)}
	}
	appr, err := approvalsFor(*approvalMode, *rulesFile)
	if err != nil {
		return exitError{2, err}
	}
	var img screen.Size
	if *imageSize != "" {
		if img, err = parseSize(*imageSize); err != nil {
			return exitError{2, fmt.Errorf("--image: %w", err)}
		}
	}
	if *httpAddr != "" {
		if err := loopback(*httpAddr); err != nil {
			return exitError{2, err}
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return exitError{2, fmt.Errorf("--out: %w", err)}
		}
	}
	log, err := logs.logger(stderr)
	if err != nil {
		return exitError{2, err}
	}

	start := *startURL
	if !disp.Browser() {
		if start != "about:blank" && start != "" || *useDemo {
			return exitError{2, fmt.Errorf("--start-url and --demo need a browser display, not %s", disp.Backend)}
		}
		start = ""
	}
	if *useDemo {
		base, stop, err := demo.NewServer().Serve(ctx)
		if err != nil {
			return exitError{2, err}
		}
		defer stop()
		start = base + "/"
	}
	policy := actions.Standard()
	if *policyFile != "" {
		if policy, err = actions.LoadPolicy(*policyFile); err != nil {
			return exitError{2, err}
		}
	} else if u, err := url.Parse(start); err == nil && u.Host != "" {
		policy.Hosts = []string{u.Host}
	}

	_, sbx, err := openSandboxes(ctx, iso, *memory, *warm, log)
	if err != nil {
		return exitError{2, err}
	}
	if sbx != nil {
		defer sbx.Close(context.WithoutCancel(ctx))
	}
	var shared *cdp.Pool
	if *browsers > 0 {
		if shared, err = sharedBrowsers(ctx, *browser, *browsers, log); err != nil {
			return exitError{2, err}
		}
		defer shared.Close(context.WithoutCancel(ctx))
	}
	ro := runner.Options{Browser: *browser, Getenv: os.Getenv, Sandboxes: sbx, MemoryMiB: *memory, Shared: shared}
	rec := newMCPRecorder(*out, log)
	newDisplay := func(ctx context.Context) (mcp.Display, error) {
		// Opened as a task's display is: its sandbox's egress proxy
		// allows the policy's hosts and the start URL's.
		notes := rec.notes()
		req := runner.DisplayRequest(runner.Task{Name: "mcp", Display: disp}, start, policy, ro, notes.note, log)
		req.StartURL = "" // the session navigates to its start page itself
		d, err := wiring.OpenDisplay(ctx, req)
		if err != nil {
			return nil, err
		}
		rec.open(d, notes)
		return d, nil
	}
	cfg := mcp.Config{NewDisplay: newDisplay, StartURL: start, Policy: policy,
		Capture: screen.CaptureOptions{Size: img}, MaxSessions: *maxSessions, IdleTimeout: idleTimeout, Version: versionString(), Logger: log}
	var srv *mcp.Server
	cfg.Attach = func(ctx context.Context, id string, d mcp.Display, _ mcp.Conn) (mcp.Attached, error) {
		var at mcp.Attached
		if appr != nil {
			var err error
			at, err = elicitApprovals(*appr, policy.Hosts, func(ctx context.Context, call, message string) (bool, string, error) {
				ok, reason, err := srv.Ask(ctx, call, message) // srv is set before any session opens
				if errors.Is(err, mcp.ErrCannotAsk) {
					err = fmt.Errorf("%w. %s", err, cannotAskRemedy)
				}
				return ok, reason, err
			}, id, d, log)
			if err != nil {
				return at, err
			}
		}
		return rec.attach(ctx, id, d, at)
	}
	srv, err = mcp.New(cfg)
	if err != nil {
		return exitError{2, err}
	}
	defer srv.Close(context.WithoutCancel(ctx))

	if *httpAddr == "" {
		if err := srv.Run(ctx, &sdk.StdioTransport{}); err != nil && ctx.Err() == nil {
			return exitError{1, err}
		}
		return nil
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return exitError{2, err}
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "spotter mcp: streamable HTTP on http://%s/\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return exitError{1, err}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// cannotAskRemedy tells a client that cannot put a question to its user
// (no MCP elicitation) what to do about the actions the rules flag.
const cannotAskRemedy = "Nobody can approve this action here: use an MCP client that supports elicitation, " +
	"or restart spotter mcp with --approvals none (flagged actions run unasked) or with --rules FILE that does not " +
	"flag it, or connect to spotter serve's /mcp instead, where an operator approves in the panel"

// elicitApprovals gives MCP session id the approver of `spotter run`
// (rules, hit-tests of d), whose questions go to the user of the client
// whose call raised them, during that call, through ask (mcp.Server.Ask:
// an MCP elicitation form).
func elicitApprovals(cfg runner.ApprovalConfig, hosts []string, ask func(ctx context.Context, call, message string) (bool, string, error),
	id string, d mcp.Display, log *slog.Logger) (mcp.Attached, error) {
	cfg.Asker = runner.AskerFunc(func(ctx context.Context, r approvals.Request) (approvals.Verdict, error) {
		ok, reason, err := ask(ctx, r.CallID, strings.TrimSpace(runner.DescribeRequest(r)))
		if err != nil {
			return approvals.Verdict{}, err
		}
		v := approvals.Verdict{Kind: approvals.Deny, Reason: reason, By: "mcp client"}
		if ok {
			v.Kind = approvals.Approve
		}
		return v, nil
	})
	note := func(text string) { log.Info(text, "session", id) }
	ap, stop, err := runner.NewApprover(cfg, hosts, d, note, log)
	if err != nil {
		return mcp.Attached{}, err
	}
	return mcp.Attached{Approver: ap, Close: func(context.Context) error { stop(); return nil }}, nil
}

// loopback refuses addresses that are not on a loopback interface: the
// server drives a browser and has no authentication of its own.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--http %s: only a loopback address (127.0.0.1, [::1], localhost) may be used", addr)
	}
	return nil
}

func parseSize(s string) (screen.Size, error) {
	w, h, ok := strings.Cut(s, "x")
	var sz screen.Size
	if !ok {
		return sz, fmt.Errorf("%q: want WxH", s)
	}
	if _, err := fmt.Sscanf(w+" "+h, "%d %d", &sz.W, &sz.H); err != nil || sz.W < 100 || sz.H < 100 || sz.W > 3840 || sz.H > 2160 {
		return sz, fmt.Errorf("%q: want WxH within 100x100..3840x2160", s)
	}
	return sz, nil
}
