package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/internal/runner"
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
	db := fs.String("db", "", "database DSN: a postgres:// URL (default: SQLite in --data)")
	token := fs.String("token", "", "the API and panel token (default: $SPOTTER_TOKEN, or a random one printed at start)")
	isolation := fs.String("isolate", "auto", serveIsolateHelp)
	memory := fs.Uint64("memory", 0, "each sandbox's memory limit in MiB (containerd; 0: isolate's default)")
	mcpStart := fs.String("mcp-start-url", "", "the page every MCP session (at /mcp) opens first; its host is the MCP sessions' navigation allowlist")
	browser := fs.String("browser", "", "Chromium executable (default: looked up on PATH)")
	timeout := fs.Duration("approval-timeout", 0, "how long an approval waits for a human before it counts as denied (default 5m)")
	rulesFile := fs.String("rules", "", "the server's approval rules: a YAML file in the schema of package approvals "+
		"(see examples/rules/approvals.yaml), checked at start; default: the built-in rules. They apply to the MCP sessions "+
		"at /mcp and to every session whose spec brings no rules of its own (approvals.rules)")
	verbose := fs.Bool("v", false, "log requests and sessions' progress to stderr")
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
		fmt.Fprintln(stderr, "Usage: spotter serve [--addr 127.0.0.1:8080] [--data DIR] [--db postgres://...] [--token T] [--rules FILE] [--isolate auto] [--allow-base-url URL]...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError{2, err}
	}
	if fs.NArg() > 0 {
		return exitError{2, fmt.Errorf("unexpected arguments: %v", fs.Args())}
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
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return exitError{2, err}
	}
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, sbx, err := openSandboxes(startCtx, *isolation, *memory, log)
	if err != nil {
		cancel()
		ln.Close()
		return exitError{2, err}
	}
	if sbx != nil {
		defer sbx.Close(context.WithoutCancel(ctx))
	}
	srv, err := web.New(startCtx, web.Config{Addr: *addr, DataDir: *data, DB: *db, Token: tok, Sandboxes: sbx,
		Browser: *browser, Getenv: os.Getenv, Logger: log, ApprovalTimeout: *timeout, Rules: serverRules, AllowBaseURLs: allowBase,
		MCP: web.MCPConfig{StartURL: *mcpStart, Rules: mcpRules}})
	cancel()
	if err != nil {
		ln.Close()
		return exitError{2, err}
	}
	fmt.Fprintf(stdout, "spotter: listening on http://%s\n", ln.Addr())
	fmt.Fprintf(stdout, "spotter: MCP (streamable HTTP) at http://%s/mcp\n", ln.Addr())
	if tok == "" {
		fmt.Fprintf(stdout, "spotter: token %s\n", srv.Token())
	} else {
		fmt.Fprintln(stdout, "spotter: token from --token or $SPOTTER_TOKEN")
	}
	err = srv.Serve(ctx, ln)
	cerr := srv.Close(context.WithoutCancel(ctx))
	if err != nil && !errors.Is(err, context.Canceled) {
		return exitError{1, err}
	}
	if cerr != nil {
		return exitError{1, cerr}
	}
	return nil
}
