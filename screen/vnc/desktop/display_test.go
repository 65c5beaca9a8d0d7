package desktop_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// helperEnv makes the test binary run TestDesktopsHelper as one of the
// processes of TestDesktopsOfTwoProcesses; its value is the process's index.
const helperEnv = "SPOTTER_DESKTOP_HELPER"

// desktopsPerProcess is how many desktops each helper process starts at once.
const desktopsPerProcess = 3

// helperSize gives every desktop of the test a size of its own, so that an
// X client that reached another desktop's server would see it.
func helperSize(proc, i int) screen.Size {
	return screen.Size{W: 320 + 40*proc + 8*i, H: 200 + 4*i}
}

// TestDesktopsOfTwoProcesses starts desktops concurrently from two processes
// (as go test does with two packages) and checks that no two share a display
// number, and that each desktop's X display and its RFB socket lead to the
// same server: an X client on DISPLAY sees that desktop's own size.
func TestDesktopsOfTwoProcesses(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		stdin interface{ Close() error }
		lines []string
		err   error
	}
	children := make([]*child, 2)
	var wg sync.WaitGroup
	for p := range children {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestDesktopsHelper$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", helperEnv, p))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, stdin: stdin}
		children[p] = c
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				if line == "ready" {
					return
				}
				if strings.HasPrefix(line, "display ") || strings.HasPrefix(line, "error ") {
					c.lines = append(c.lines, line)
				}
			}
			c.err = fmt.Errorf("helper %d ended before it was ready: %v", p, sc.Err())
		})
	}
	wg.Wait() // both processes now hold all their desktops at once
	seen := map[string]int{}
	for p, c := range children {
		if c.err != nil {
			t.Error(c.err)
		}
		for _, l := range c.lines {
			if strings.HasPrefix(l, "error ") {
				t.Errorf("helper %d: %s", p, l)
				continue
			}
			num := strings.Fields(l)[1]
			if q, ok := seen[num]; ok {
				t.Errorf("display %s is used by helpers %d and %d", num, q, p)
			}
			seen[num] = p
		}
	}
	if len(seen) != 2*desktopsPerProcess {
		t.Errorf("got %d distinct displays (%v), want %d", len(seen), seen, 2*desktopsPerProcess)
	}
	for _, c := range children {
		c.stdin.Close()
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
}

// TestDesktopsHelper is one process of TestDesktopsOfTwoProcesses: it
// starts its desktops at once, checks each, prints "display :N" for each
// and "ready", and keeps them until its stdin closes.
func TestDesktopsHelper(t *testing.T) {
	var proc int
	if _, err := fmt.Sscan(os.Getenv(helperEnv), &proc); err != nil {
		t.Skip("run by TestDesktopsOfTwoProcesses")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	ds := make([]*desktop.Desktop, desktopsPerProcess)
	errs := make([]error, desktopsPerProcess)
	var wg sync.WaitGroup
	for i := range ds {
		wg.Go(func() {
			size := helperSize(proc, i)
			d, err := desktop.Start(ctx, desktop.Config{Size: size, NoWindowManager: true})
			if err != nil {
				errs[i] = err
				return
			}
			ds[i] = d
			errs[i] = checkDesktop(ctx, d, size)
		})
	}
	wg.Wait()
	for i, d := range ds {
		if errs[i] != nil {
			fmt.Printf("error desktop %d: %v\n", i, strings.ReplaceAll(errs[i].Error(), "\n", " | "))
		} else {
			fmt.Printf("display %s\n", d.Display)
		}
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
	for _, d := range ds {
		if d != nil {
			d.Close()
		}
	}
}

// checkDesktop checks that an X client on d's display and a VNC client on
// d's socket both see a screen of size.
func checkDesktop(ctx context.Context, d *desktop.Desktop, size screen.Size) error {
	geo := exec.CommandContext(ctx, "xdotool", "getdisplaygeometry")
	geo.Env = append(os.Environ(), d.Env()...)
	out, err := geo.CombinedOutput()
	if want := fmt.Sprintf("%d %d", size.W, size.H); err != nil || strings.TrimSpace(string(out)) != want {
		return fmt.Errorf("xdotool getdisplaygeometry on %s = %q (%v), want %q", d.Display, out, err, want)
	}
	v, err := d.Dial(ctx, vnc.Config{})
	if err != nil {
		return err
	}
	defer v.Close()
	shot, err := v.Capture(ctx, screen.CaptureOptions{})
	if err != nil || shot.Frame.Viewport != size {
		return fmt.Errorf("VNC capture of %s: %v (%v), want %v", d.Display, shot.Frame.Viewport, err, size)
	}
	return nil
}
