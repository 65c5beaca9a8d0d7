package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/internal/bench"
	"github.com/spotter-harness/spotter/isolate"
)

// benchCmd runs `spotter bench`: the benchmark suite with its same-run
// baselines, a table on stdout and a JSON line per figure in a file.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sections := fs.String("sections", strings.Join(bench.Sections, ","), "sections to run, comma-separated")
	rounds := fs.Int("rounds", 30, "samples per configuration")
	maxSessions := fs.Int("max-sessions", 32, "the concurrency ramp's cap (its levels go up to 128)")
	steps := fs.Int("steps", 8, "steps per session at each level of the concurrency ramp")
	think := fs.Duration("think", 0, "each session's wait between steps in the concurrency ramp, standing for the model's turn (0: back to back)")
	jsonOut := fs.String("json", filepath.Join("runs", "bench", "figures.jsonl"), "write one JSON line per figure here")
	driver := fs.String("driver", "", "playwright-core driver directory for the baseline (default: install-driver.sh's)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (the in-process server included) to this file")
	blockProfile := fs.String("blockprofile", "", "write a profile of where goroutines blocked (channels, locks) to this file")
	socket := fs.String("containerd", "", "containerd socket for the sandboxed figures (default: "+isolate.DefaultSocket+" when it exists)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: spotter bench [flags]\n\nSections: "+strings.Join(bench.Sections, ", "))
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *think < 0 || *rounds < 1 || *maxSessions < 1 || *steps < 1 {
		return usageError(fs, "--think must be 0 or more, --rounds, --max-sessions and --steps 1 or more")
	}
	o := bench.Options{Rounds: *rounds, MaxSessions: *maxSessions, StepsPerSession: *steps, Think: *think,
		DriverDir: cmp.Or(*driver, os.Getenv("SPOTTER_PLAYWRIGHT_DRIVER"))}
	for _, s := range strings.Split(*sections, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !contains(bench.Sections, s) {
			return exitError{2, fmt.Errorf("bench: unknown section %q (want %s)", s, strings.Join(bench.Sections, ", "))}
		}
		o.Sections = append(o.Sections, s)
	}
	o.Containerd = *socket
	if o.Containerd == "" {
		if _, err := os.Stat(isolate.DefaultSocket); err == nil && os.Geteuid() == 0 {
			o.Containerd = isolate.DefaultSocket
		}
	}
	o.Server = serverBench(*rounds)
	o.Report = func(f bench.Figure) {
		v := fmt.Sprintf("p50 %.1f %s, p95 %.1f %s", f.P50, f.Unit, f.P95, f.Unit)
		if f.N == 0 {
			v = fmt.Sprintf("%.4g %s", f.Value, f.Unit)
		}
		fmt.Fprintf(stderr, "bench: %s: %s: %s\n", f.Section, f.Name, v)
	}
	stopProfiles, err := startProfiles(*cpuProfile, *blockProfile)
	if err != nil {
		return exitError{1, err}
	}
	figs, err := bench.Run(ctx, o)
	err = errors.Join(err, stopProfiles())
	if werr := writeFigures(*jsonOut, figs); werr != nil {
		err = errors.Join(err, werr)
	}
	if terr := bench.WriteTable(stdout, figs); terr != nil {
		err = errors.Join(err, terr)
	}
	if err != nil {
		return exitError{1, err}
	}
	fmt.Fprintf(stderr, "bench: figures in %s\n", *jsonOut)
	return nil
}

func writeFigures(path string, figs []bench.Figure) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := bench.WriteJSON(f, figs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startProfiles starts the CPU profile and the block profile a run asked
// for; the function it returns stops them and writes their files.
func startProfiles(cpu, block string) (stop func() error, err error) {
	var cpuFile *os.File
	if cpu != "" {
		if cpuFile, err = os.Create(cpu); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			cpuFile.Close()
			return nil, err
		}
	}
	if block != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	}
	return func() error {
		var err error
		if cpuFile != nil {
			pprof.StopCPUProfile()
			err = cpuFile.Close()
		}
		if block != "" {
			runtime.SetBlockProfileRate(0)
			f, ferr := os.Create(block)
			if ferr != nil {
				return errors.Join(err, ferr)
			}
			err = errors.Join(err, pprof.Lookup("block").WriteTo(f, 0), f.Close())
		}
		return err
	}, nil
}
