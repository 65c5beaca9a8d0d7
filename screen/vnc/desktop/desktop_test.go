package desktop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

func integration(t *testing.T) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") == "" {
		t.Skip("set SPOTTER_INTEGRATION=1 to start a real Xvnc")
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  desktop.Config
		want string
	}{
		{"no Xvnc", desktop.Config{Xvnc: "/nonexistent/Xvnc"}, "Xvnc not found"},
		{"size", desktop.Config{Size: screen.Size{W: 10000, H: 10}}, "size 10000x10"},
		{"password", desktop.Config{Password: "longer than 8"}, "at most 8 bytes"},
		{"app without a command", desktop.Config{Apps: []desktop.App{{}}}, "no command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := desktop.Start(t.Context(), tt.cfg)
			if err == nil {
				d.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
			}
		})
	}
	if _, err := desktop.Start(t.Context(), desktop.Config{Xvnc: "/nonexistent/Xvnc"}); !errors.Is(err, desktop.ErrNoXvnc) {
		t.Errorf("Start(no Xvnc) = %v, want ErrNoXvnc", err)
	}
}

// xvncPid returns the pid of the Xvnc that serves socket.
func xvncPid(t *testing.T, socket string) int {
	t.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], "Xvnc") && slices.Contains(args, socket) {
			return pid
		}
	}
	t.Fatalf("no Xvnc process serves %s", socket)
	return 0
}

// tcpListeners returns the TCP sockets of process pid that listen.
func tcpListeners(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var listening []string
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] { // 0A: LISTEN
				listening = append(listening, table+" "+f[1])
			}
		}
	}
	return listening
}

func TestStartClose(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	d, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 640, H: 480}, Apps: []desktop.App{desktop.XTerm()}})
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer d.Close()
	pid := xvncPid(t, d.Socket)
	if l := tcpListeners(t, pid); len(l) > 0 {
		t.Errorf("Xvnc listens on TCP: %v", l)
	}
	if fi, err := os.Stat(d.Socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("RFB socket %s: %v, %v; want mode 0600", d.Socket, fi.Mode(), err)
	}
	for _, e := range d.Env() {
		if v, ok := strings.CutPrefix(e, "XAUTHORITY="); ok {
			if fi, err := os.Stat(v); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("Xauthority %s: %v, %v; want mode 0600", v, fi.Mode(), err)
			}
		}
	}

	v, err := d.Dial(ctx, vnc.Config{})
	if err != nil {
		t.Fatalf("Dial() = %v", err)
	}
	defer v.Close()
	shot, err := v.Capture(ctx, screen.CaptureOptions{})
	if err != nil || shot.Frame.Viewport != (screen.Size{W: 640, H: 480}) {
		t.Errorf("Capture() = %v, %v; want a 640x480 screen", shot.Frame.Viewport, err)
	}

	dir := filepath.Dir(d.Socket)
	if err := d.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the desktop's directory %s after Close: %v, want it removed", dir, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(b), ") Z ") {
			t.Errorf("Xvnc (pid %d) still runs after Close", pid)
		}
	}
}

func TestStartMissingApp(t *testing.T) {
	integration(t)
	_, err := desktop.Start(t.Context(), desktop.Config{Apps: []desktop.App{{Argv: []string{"no-such-program-spotter"}}}})
	if err == nil || !strings.Contains(err.Error(), "no-such-program-spotter") {
		t.Errorf("Start(an app that does not exist) = %v, want an error naming it", err)
	}
}

func TestTwoDesktops(t *testing.T) {
	integration(t)
	var ds []*desktop.Desktop
	for range 2 {
		d, err := desktop.Start(t.Context(), desktop.Config{Size: screen.Size{W: 320, H: 200}, NoWindowManager: true})
		if err != nil {
			t.Fatalf("Start() = %v", err)
		}
		defer d.Close()
		ds = append(ds, d)
	}
	if ds[0].Display == ds[1].Display || ds[0].Socket == ds[1].Socket {
		t.Errorf("two desktops share display %s / %s, sockets %s / %s", ds[0].Display, ds[1].Display, ds[0].Socket, ds[1].Socket)
	}
}
