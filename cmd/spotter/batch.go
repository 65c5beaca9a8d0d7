package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/spotter-harness/spotter/internal/batch"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
)

const batchUsage = `Usage: spotter batch JOBS.jsonl [flags]

Runs every task of JOBS.jsonl (one JSON task per line, in the format of a
task file, with an optional "id") into DIR/<id>, N at a time, then writes
DIR/summary.json and DIR/junit.xml. Running it again with the same DIR
skips the jobs that finished and runs the rest.

Exit codes: 0 every job passed, 1 a job failed or could not run, 2 the
batch could not run, 3 it was interrupted (SIGTERM, SIGINT) before every
job ran: run it again to resume.

Flags:
`

// batchCmd runs `spotter batch`.
func batchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "batch directory; the same one resumes a batch (default runs/JOBS-NAME)")
	parallel := fs.Int("parallel", 1, "jobs to run at a time (each runs its own browser)")
	isolation := fs.String("isolate", "auto", isolateHelp)
	memory := fs.Uint64("memory", 0, "memory limit of each containerd sandbox, in MiB (default 1024)")
	warm := warmFlag(fs, -1, "; default: --parallel")
	shard := fs.String("shard", "", "I/N: run only shard I (0-based) of N, e.g. --shard $(JOB_COMPLETION_INDEX)/4")
	browser := fs.String("browser", "", "Chromium executable (default: chromium on PATH)")
	progress := fs.String("progress", "auto", "auto (a bar on a terminal, JSON lines otherwise), bar, or json")
	logs := addLogFlags(fs, "log progress to stderr")
	approvalMode := fs.String("approvals", "", "which actions the approval rules hold: flagged (those they flag), all (every "+
		"action with an effect), or none (no approvals; provider safety checks are still refused). A batch asks nobody: a "+
		"held action is refused with its rule's reason, which the model sees as the call's error (default: the --rules "+
		"file's supervise, or flagged)")
	rulesFile := fs.String("rules", "", rulesHelp)
	fs.Usage = func() {
		fmt.Fprint(stderr, batchUsage)
		fs.PrintDefaults()
	}
	// Accept flags before and after the jobs file.
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError(fs, "batch needs a jobs file")
	}
	file := rest[0]
	if err := parseFlags(fs, rest[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments: %v", fs.Args())
	}
	if *parallel < 1 {
		return usageError(fs, "--parallel %d: want 1 or more jobs at a time", *parallel)
	}
	if err := checkIsolation(*isolation); err != nil {
		return usageError(fs, "%v", err)
	}

	sh, err := batch.ParseShard(*shard)
	if err != nil {
		return exitError{2, err}
	}
	jobs, err := batch.Load(file)
	if err != nil {
		return exitError{2, err}
	}
	appr, err := approvalsFor(*approvalMode, *rulesFile) // nobody to ask: held actions are refused
	if err != nil {
		return exitError{2, err}
	}
	log, err := logs.logger(stderr)
	if err != nil {
		return exitError{2, err}
	}
	if *warm == -1 {
		*warm = *parallel
	}
	iso, sbx, err := openSandboxes(ctx, *isolation, *memory, *warm, log)
	if err != nil {
		return exitError{2, err}
	}
	if sbx != nil {
		defer sbx.Close(context.WithoutCancel(ctx))
	}
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	dir := *out
	if dir == "" {
		dir = filepath.Join("runs", name)
	}
	host, _ := os.Hostname()
	cfg := batch.Config{
		Out: dir, Parallel: *parallel, Shard: sh, Isolation: batch.Isolation(iso), Sandboxes: sbx,
		Browser: *browser, Getenv: os.Getenv, Logger: log, Approvals: appr,
		Progress: stdout, Name: name, Hostname: host,
	}
	switch *progress {
	case "auto":
		cfg.Bar, cfg.Width = terminal(stdout)
	case "bar":
		cfg.Bar = true
		if _, w := terminal(stdout); w > 0 {
			cfg.Width = w
		}
	case "json":
	default:
		return exitError{2, fmt.Errorf("--progress %q: want auto, bar or json", *progress)}
	}

	sum, err := batch.Run(ctx, jobs, cfg)
	interrupted := err != nil && ctx.Err() != nil && sum.Total > 0
	if err != nil && !interrupted {
		return exitError{2, err}
	}
	if cfg.Bar {
		summaryPath, junitPath := batch.Files(dir, sh)
		fmt.Fprintf(stdout, "jobs:    %d: %d passed, %d failed, %d errors, %d not run (%d reused from an earlier run)\n",
			sum.Total, sum.Passed, sum.Failed, sum.Errors, sum.Skipped, sum.Reused)
		if len(sum.Attempts) > 1 {
			fmt.Fprintf(stdout, "time:    %s (%s over the batch's %d runs)\n", sum.Elapsed.Round(time.Millisecond),
				sum.TotalElapsed.Round(time.Millisecond), len(sum.Attempts))
		} else {
			fmt.Fprintf(stdout, "time:    %s\n", sum.Elapsed.Round(time.Millisecond))
		}
		fmt.Fprintf(stdout, "summary: %s\n", summaryPath)
		fmt.Fprintf(stdout, "junit:   %s\n", junitPath)
	}
	switch {
	case interrupted:
		// Not 1: a Kubernetes Job retries an interrupted shard (its
		// podFailurePolicy fails the index on 1 and 2 only).
		return exitError{exitInterrupted, fmt.Errorf("%w; run the same command again to resume", err)}
	case !sum.OK():
		return exitError{1, fmt.Errorf("%d of %d jobs did not pass", sum.Total-sum.Passed, sum.Total)}
	}
	return nil
}

// exitInterrupted is spotter batch's exit code when a signal stopped it
// before every job ran.
const exitInterrupted = 3

// isolateHelp describes the --isolate flag of run and batch.
const isolateHelp = "where browsers run: containerd (a sandbox per task), local (a host browser behind the egress proxy), " +
	"none (a host browser, no proxy), or auto (containerd when its daemon's socket exists, else local)"

// checkIsolation refuses an --isolate value that names no mode.
func checkIsolation(name string) error {
	switch name {
	case "containerd", "local", "none", "auto":
		return nil
	}
	return fmt.Errorf("--isolate %q: want containerd, local, none or auto", name)
}

// openSandboxes resolves --isolate (auto: containerd when the daemon's
// socket exists) and prepares its sandboxes: nil for none. For containerd
// that removes what crashed runs left behind. The caller must close them.
func openSandboxes(ctx context.Context, name string, memoryMiB uint64, warm int, log *slog.Logger) (string, *wiring.Sandboxes, error) {
	if warm < 0 {
		return "", nil, fmt.Errorf("--warm %d: want 0 or more warm sandboxes", warm)
	}
	if name == "none" {
		return name, nil, nil
	}
	backend, err := isolate.Choose(name, os.Getenv("SPOTTER_CONTAINERD_SOCKET"))
	if err != nil {
		return "", nil, fmt.Errorf("--isolate: %w", err)
	}
	cfg := wiring.SandboxConfig{Backend: backend, MemoryMiB: memoryMiB, Warm: warm, Logger: log, Auto: name == "auto"}
	cfg.Containerd.Socket = os.Getenv("SPOTTER_CONTAINERD_SOCKET")
	sbx, err := wiring.NewSandboxes(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("--isolate %s: %w", backend, err)
	}
	return string(backend), sbx, nil
}

// warmFlag defines --warm, the size of the warm pool of containerd
// sandboxes (wiring.SandboxConfig.Warm), for the commands that start them.
func warmFlag(fs *flag.FlagSet, def int, note string) *int {
	return fs.Int("warm", def, "containerd sandboxes kept started ahead of demand, each with a browser, "+
		"each used by one session only (0: none"+note+")")
}

// terminal reports whether w is a terminal, and its width.
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return true, 0
	}
	return true, width
}
