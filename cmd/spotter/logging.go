package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/spotter-harness/spotter/internal/tracelog"
)

// logFlags are every command's logging flags: -v and --log-format.
type logFlags struct {
	verbose *bool
	format  *string
}

func addLogFlags(fs *flag.FlagSet, verboseHelp string) logFlags {
	return logFlags{
		verbose: fs.Bool("v", false, verboseHelp),
		format: fs.String("log-format", "text", "how log lines are written to stderr: text (key=value) or json (one object a line); "+
			"either way a line logged in a traced request or turn carries its trace_id and span_id"),
	}
}

// logger returns the command's logger: warnings and errors, and with -v
// its progress too, in the format --log-format names.
func (l logFlags) logger(w io.Writer) (*slog.Logger, error) {
	level := slog.LevelWarn
	if *l.verbose {
		level = slog.LevelInfo
	}
	switch *l.format {
	case "text", "json":
		return tracelog.NewLogger(w, level, *l.format == "json"), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", *l.format)
}
