package main

import (
	"fmt"
	"strings"

	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/internal/yamldoc"
)

// displayHelp describes the --display flags of spotter mcp and serve.
const displayHelp = "the sessions' display: a backend (chromium, vnc, desktop, playwright) or a YAML mapping as in a task file, " +
	"such as '{backend: desktop, command: [xterm]}' or '{backend: vnc, address: \"127.0.0.1:5900\", password_env: VNC_PASSWORD}'"

// parseDisplay reads a --display flag: a backend's name, or a YAML mapping
// of the task file's display fields. w and h are the size the display
// takes if the flag names none. The result is checked.
func parseDisplay(flag string, w, h int) (wiring.DisplaySpec, error) {
	var d wiring.DisplaySpec
	flag = strings.TrimSpace(flag)
	switch {
	case strings.HasPrefix(flag, "{"):
		if err := yamldoc.Decode([]byte(flag), &d); err != nil {
			return d, fmt.Errorf("--display: %v", err)
		}
	default:
		d.Backend = flag
	}
	if d.Width == 0 && d.Height == 0 {
		d.Width, d.Height = w, h
	}
	d.Defaults()
	if err := d.Check(); err != nil {
		return d, fmt.Errorf("--display: %w", err)
	}
	return d, nil
}
