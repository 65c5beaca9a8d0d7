package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spotter-harness/spotter/internal/qa"
)

// testCmd runs `spotter test DIR|FILE... [flags]`: every test file, with
// progress on stdout, then report.html, junit.xml and summary.json in the
// output directory. Exit codes: 0 every test passed, 1 some failed, 2 the
// suite could not run.
func testCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output directory (default runs/test-TIME)")
	junit := fs.String("junit", "", "also write the JUnit XML to this file")
	browser := fs.String("browser", "", "Chromium executable (default: chromium on PATH)")
	record := fs.Bool("record-replay", false, "save each passing run as the test's recording (replays/NAME beside the file)")
	replayRuns := fs.Bool("replay", false, "replay the recordings without a model, comparing every step's screenshot")
	update := fs.Bool("update-baselines", false, "write region baselines instead of comparing with them")
	logs := addLogFlags(fs, "log the loop's progress to stderr")
	isolation := fs.String("isolate", "auto", isolateHelp)
	memory := fs.Uint64("memory", 0, "memory limit of a containerd sandbox, in MiB (default 1024)")
	warm := warmFlag(fs, 1, "")
	approvalMode := fs.String("approvals", "", approvalsHelp)
	rulesFile := fs.String("rules", "", rulesHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: spotter test DIR|FILE... [--out DIR] [--junit FILE] [--record-replay] [--replay] [--update-baselines] [--isolate I] [--approvals A] [--rules FILE]")
		fs.PrintDefaults()
	}
	// Flags may come before, between and after the paths.
	var paths []string
	for rest := args; ; {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(paths) == 0 {
		return usageError(fs, "test needs a directory or file of tests")
	}
	if err := checkIsolation(*isolation); err != nil {
		return usageError(fs, "%v", err)
	}
	if *record && *replayRuns {
		return exitError{2, errors.New("--record-replay and --replay do not go together (a healed replay is recorded anyway)")}
	}
	files, err := qa.Find(paths)
	if err != nil {
		return exitError{2, err}
	}
	appr, err := askedApprovals(*approvalMode, *rulesFile, stderr)
	if err != nil {
		return exitError{2, err}
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("runs", "test-"+time.Now().Format("20060102-150405"))
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
	s, err := qa.Run(ctx, files, qa.Options{Out: dir, Browser: *browser, Logger: log, Getenv: os.Getenv, Progress: stdout,
		Record: *record, Replay: *replayRuns, UpdateBaselines: *update, Sandboxes: sbx, MemoryMiB: *memory,
		Approvals: appr})
	if err != nil {
		return exitError{2, err}
	}
	if *junit != "" {
		b, err := os.ReadFile(filepath.Join(dir, s.JUnit))
		if err == nil {
			err = os.WriteFile(*junit, b, 0o644)
		}
		if err != nil {
			return exitError{2, fmt.Errorf("write %s: %w", *junit, err)}
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed in %s\nreport: %s\n", s.Passed, s.Failed,
		s.Elapsed.Round(10*time.Millisecond), filepath.Join(dir, s.Report))
	if !s.OK() {
		return exitError{1, fmt.Errorf("%d of %d tests failed", s.Failed, len(s.Tests))}
	}
	return nil
}
