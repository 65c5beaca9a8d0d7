package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// childEnv marks the agent that an init agent started, so that it does not
// become an init itself.
const childEnv = "SPOTTER_AGENT_CHILD"

// Main runs the agent from command-line arguments (the ones after
// "spotter agent"); it blocks until ctx is done or, as PID 1, until its
// child exits. Logs go to stderr.
//
//	--socket PATH       unix socket to serve (required)
//	--proxy ADDR        loopback address of the proxy bridge, e.g. 127.0.0.1:3128
//	--egress PATH       unix socket of the host's egress proxy
//	--chromium PATH     browser binary
//	--profiles DIR      where browser profiles are made
//	-v                  debug logging
//	-- FLAGS...         extra Chromium flags
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	fs.StringVar(&cfg.Socket, "socket", "", "unix socket to serve")
	fs.StringVar(&cfg.ProxyAddr, "proxy", "", "loopback address of the proxy bridge, e.g. 127.0.0.1:3128")
	fs.StringVar(&cfg.EgressSocket, "egress", "", "unix socket of the host's egress proxy")
	fs.StringVar(&cfg.Chromium, "chromium", "", "browser binary")
	fs.StringVar(&cfg.ProfileDir, "profiles", "", "where browser profiles are made")
	verbose := fs.Bool("v", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Flags = fs.Args()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if os.Getpid() == 1 && os.Getenv(childEnv) == "" {
		return runInit(cfg.Logger)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return Run(ctx, cfg)
}

// runInit starts the agent again as a child, forwards SIGTERM and SIGINT
// to it, reaps every process that ends up a child of PID 1, and returns
// when the agent child has exited.
func runInit(log *slog.Logger) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	p, err := os.StartProcess(self, os.Args, &os.ProcAttr{
		Env:   append(os.Environ(), childEnv+"=1"),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return fmt.Errorf("agent init: %w", err)
	}
	go func() {
		for s := range sigs {
			p.Signal(s)
		}
	}()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("agent init: wait: %w", err)
		}
		if pid != p.Pid {
			continue // an orphan, now reaped
		}
		switch {
		case ws.Exited() && ws.ExitStatus() == 0:
			return nil
		case ws.Exited():
			return fmt.Errorf("agent exited with status %d", ws.ExitStatus())
		case ws.Signaled():
			log.Info("agent ended by signal", "signal", ws.Signal())
			if ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGINT {
				return nil
			}
			return fmt.Errorf("agent ended by %v", ws.Signal())
		}
	}
}
