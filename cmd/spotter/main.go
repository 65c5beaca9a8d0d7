// Command spotter is the computer-use harness: it lets a model drive a real
// browser through validated, policy-checked actions.
//
//	spotter version
//	spotter run TASK.yaml [--out DIR] [--browser PATH] [--isolate containerd|local|none|auto]
//	            [--approvals flagged|all|none] [--rules FILE]
//	spotter run --provider P --model M --task "..." [--start-url U]
//	spotter batch JOBS.jsonl [--parallel N] [--out DIR] [--shard I/N] [--isolate ...]
//
// Provider keys and endpoints come from the environment: ANTHROPIC_API_KEY,
// OPENAI_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, and the providers' base-URL
// variables (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL).
//
// Exit codes: 0 the run succeeded, 1 it ran but did not succeed, 2 it could
// not run (bad flags, bad task file, no browser).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `spotter is a computer-use harness: a model proposes UI actions, Spotter disposes.

Usage:
  spotter run TASK.yaml [--out DIR] [--isolate containerd|local|none|auto] [--approvals flagged|all|none] [--rules FILE]
                     run a task file and write its trace and report; flagged actions are asked
                     about on a terminal, refused without one
  spotter run --provider P --model M --task "..." [--start-url U]
                     run a one-off task with a real model
  spotter batch JOBS.jsonl [--parallel N] [--out DIR] [--shard I/N]
                     run a file of tasks, resumably; writes summary.json and junit.xml
  spotter test DIR|FILE... [--out DIR] [--junit FILE] [--replay]
                     run QA test files (checks, baselines, replays) and write a report and JUnit
  spotter serve [--addr 127.0.0.1:8080] [--data DIR] [--db URL] [--rules FILE]
                     the HTTP server: sessions, the executor API, approvals, the panel, MCP at /mcp
  spotter mcp [--http 127.0.0.1:PORT]
                     an MCP server over stdio (or streamable HTTP) for any MCP client
  spotter bench [--sections ...] [--json FILE]
                     measure Spotter next to a same-run Playwright baseline
  spotter version    print the version

Run 'spotter COMMAND -h' for the flags of a command.
`

// exitError carries the process exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

func (e exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	code := 2
	var ee exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(os.Stderr, "spotter:", err)
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError{2, errors.New("no command given")}
	}
	switch args[0] {
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "spotter", versionString())
		return nil
	case "run":
		return runTask(ctx, args[1:], stdout, stderr)
	case "batch":
		return batchCmd(ctx, args[1:], stdout, stderr)
	case "serve":
		return serveCmd(ctx, args[1:], stdout, stderr)
	case "test":
		return testCmd(ctx, args[1:], stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, args[1:], stdout, stderr)
	case "bench":
		return benchCmd(ctx, args[1:], stdout, stderr)
	case "agent": // hidden: the program inside a containerd sandbox
		return runAgent(ctx, args[1:], stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return exitError{2, fmt.Errorf("unknown command %q", args[0])}
}

// parseFlags parses args into fs. -h prints fs's usage and returns
// flag.ErrHelp; a wrong flag or value is one line that says where the
// flags are described, not the whole usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return usageError(fs, "%v", err)
	}
	return nil
}

// usageError is a command-line mistake for command fs: one line, and
// where the command's flags are described.
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	return exitError{2, fmt.Errorf("%s; see 'spotter %s -h'", fmt.Sprintf(format, args...), fs.Name())}
}

// replaceRun makes dir ready for a new run, as test runners do with their
// output folder: a previous run there is removed (and stderr says so); a
// folder that holds anything else is left alone and refused.
func replaceRun(dir string, stderr io.Writer) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, err)
	case len(entries) == 0:
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, trace.EventsFile)); err != nil {
		return fmt.Errorf("--out %s holds files that are not a Spotter run; name an empty or new folder", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("--out %s: remove the previous run: %w", dir, err)
	}
	fmt.Fprintf(stderr, "spotter: replacing the previous run in %s\n", dir)
	return nil
}

func versionString() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func runTask(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output directory (default runs/NAME-TIME)")
	browser := fs.String("browser", "", "Chromium executable (default: chromium on PATH)")
	logs := addLogFlags(fs, "log progress to stderr")
	provider := fs.String("provider", "", "model provider: "+strings.Join(wiring.Providers[1:], ", ")+" (overrides the task file's)")
	modelName := fs.String("model", "", "the provider's model name (default: the adapter's)")
	taskText := fs.String("task", "", "what the model should do (a one-off task without a task file)")
	startURL := fs.String("start-url", "about:blank", "where a one-off task starts")
	maxSteps := fs.Int("max-steps", 0, "step cap (default: the task file's, or 50)")
	isolation := fs.String("isolate", "auto", isolateHelp)
	memory := fs.Uint64("memory", 0, "memory limit of a containerd sandbox, in MiB (default 1024)")
	warm := warmFlag(fs, 0, "")
	approvalMode := fs.String("approvals", "", approvalsHelp)
	rulesFile := fs.String("rules", "", rulesHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: spotter run TASK.yaml [flags]\n       spotter run --provider P --model M --task \"...\" [--start-url U] [flags]")
		fs.PrintDefaults()
	}
	// Accept flags before and after the task file.
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var file string
	if rest := fs.Args(); len(rest) > 0 {
		file = rest[0]
		if err := parseFlags(fs, rest[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usageError(fs, "unexpected arguments: %v", fs.Args())
		}
	}
	if err := checkIsolation(*isolation); err != nil {
		return usageError(fs, "%v", err)
	}

	var t runner.Task
	var err error
	switch {
	case file != "" && *taskText != "":
		return exitError{2, errors.New("give a task file or --task, not both")}
	case file != "":
		t, err = runner.Load(file)
	case *taskText != "":
		t, err = runner.OneOff(*taskText, *startURL, *provider, *modelName)
	default:
		return usageError(fs, "run needs a task file or --task")
	}
	if err != nil {
		return exitError{2, err}
	}
	appr, err := askedApprovals(*approvalMode, *rulesFile, stderr)
	if err != nil {
		return exitError{2, err}
	}
	if *provider != "" {
		t.Model.Provider, t.Model.Name = *provider, *modelName
	}
	if *maxSteps > 0 {
		t.MaxSteps = *maxSteps
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("runs", t.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := replaceRun(dir, stderr); err != nil {
		return exitError{2, err}
	}
	log, err := logs.logger(stderr)
	if err != nil {
		return exitError{2, err}
	}

	_, sbx, err := openSandboxes(ctx, *isolation, *memory, *warm, log)
	if err != nil {
		return exitError{2, err}
	}
	if sbx != nil {
		defer sbx.Close(context.WithoutCancel(ctx))
	}
	res, err := runner.Run(ctx, t, runner.Options{Out: dir, Browser: *browser, Logger: log, Getenv: os.Getenv, Sandboxes: sbx,
		Approvals: appr})
	if err != nil {
		return exitError{2, err}
	}
	o := res.Outcome
	fmt.Fprintf(stdout, "task:    %s\n", res.Task)
	fmt.Fprintf(stdout, "outcome: %s after %d steps, %d calls (%d failed), %s\n", o.Stop, o.Steps, o.Calls, o.Failed, o.Elapsed.Round(time.Millisecond))
	if o.Err != "" {
		fmt.Fprintf(stdout, "error:   %s\n", o.Err)
	}
	if o.Text != "" {
		fmt.Fprintf(stdout, "model:   %s\n", oneLine(o.Text, 200))
	}
	if res.Demo != nil {
		fmt.Fprintf(stdout, "demo:    %d of %d stages completed", len(res.Demo.Completed), len(res.Demo.Completed)+len(res.Demo.Missing))
		if len(res.Demo.Missing) > 0 {
			fmt.Fprintf(stdout, " (missing: %v)", res.Demo.Missing)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "trace:   %s\n", res.Trace)
	if res.Report != "" {
		fmt.Fprintf(stdout, "report:  %s\n", res.Report)
	}
	if !res.OK {
		return exitError{1, fmt.Errorf("the run did not succeed: %s", o.Stop)}
	}
	if res.Demo != nil && len(res.Demo.Missing) > 0 {
		return exitError{1, fmt.Errorf("the demo run missed stages %v", res.Demo.Missing)}
	}
	return nil
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
