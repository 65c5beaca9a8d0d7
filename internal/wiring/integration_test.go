package wiring

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/playwright"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// The vnc backend connects to a VNC server that runs elsewhere, with the
// password from the variable the spec names; a screen of another size than
// the spec's is refused in words, and so is a browser-only action. A vnc
// display has no DOM to inspect.
func TestOpenVNC(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Xvnc")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	desk, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 800, H: 600}, Password: "s3cret"})
	if err != nil {
		t.Fatalf("start a desktop to connect to: %v", err)
	}
	defer desk.Close()
	env := func(k string) string {
		if k == "TEST_VNC_PASSWORD" {
			return "s3cret"
		}
		return ""
	}
	spec := DisplaySpec{Backend: VNC, Address: "unix:" + desk.Socket, PasswordEnv: "TEST_VNC_PASSWORD", Width: 800, Height: 600}

	wrong := spec
	wrong.Width, wrong.Height = 1280, 800
	if d, err := OpenDisplay(ctx, DisplayRequest{Display: wrong, Getenv: env}); err == nil {
		d.Close(ctx)
		t.Errorf("OpenDisplay(1280x800 on an 800x600 server) = nil error, want one")
	} else if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "screen is 800x600") {
		t.Errorf("OpenDisplay(1280x800 on an 800x600 server) = %v, want ErrSpec naming the server's size", err)
	}

	d, err := OpenDisplay(ctx, DisplayRequest{Display: spec, Getenv: env})
	if err != nil {
		t.Fatalf("OpenDisplay(vnc) = %v", err)
	}
	defer d.Close(context.Background())
	if _, ok := d.(*BrowserDisplay); ok {
		t.Errorf("OpenDisplay(vnc) is a BrowserDisplay, want a display without a DOM")
	}
	shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 800, H: 600}, Format: screen.PNG})
	if err != nil || shot.Frame.Viewport != (screen.Size{W: 800, H: 600}) {
		t.Fatalf("Capture() = %v (viewport %v), want an 800x600 screenshot", err, shot.Frame.Viewport)
	}
	err = d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: "https://example.com/"}})
	if !errors.Is(err, screen.ErrUnsupported) || !strings.Contains(err.Error(), "not a browser") {
		t.Errorf("Perform(navigate) = %v, want ErrUnsupported saying the display is not a browser", err)
	}
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(10, 10)}}); err != nil {
		t.Errorf("Perform(click) = %v", err)
	}

	bad := spec
	bad.PasswordEnv = "TEST_VNC_WRONG"
	wrongPass := func(k string) string { return map[string]string{"TEST_VNC_WRONG": "nope"}[k] }
	if d, err := OpenDisplay(ctx, DisplayRequest{Display: bad, Getenv: wrongPass}); err == nil {
		d.Close(ctx)
		t.Errorf("OpenDisplay(wrong password) = nil error, want one")
	} else if strings.Contains(err.Error(), "nope") {
		t.Errorf("OpenDisplay(wrong password) = %v: the error shows the password", err)
	}
}

// The playwright backend connects to a Playwright browser server
// (chromium.launchServer, as a grid runs it) at the spec's ws_endpoint: a
// browser display, which opens the start page and hit-tests.
func TestOpenPlaywrightServer(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Playwright server")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	driver := filepath.Join(cache, "spotter", "playwright-"+playwright.DriverVersion)
	script, err := filepath.Abs("../../screen/playwright/testdata/launch-server.js")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(driver, "node"), script, filepath.Join(driver, "package"), "/usr/bin/chromium",
		"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a Playwright server (screen/playwright/install-driver.sh installs its driver): %v", err)
	}
	// Wait only once stdout is read to its end.
	read := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		<-read
		exited <- cmd.Wait()
	}()
	defer func() {
		stdin.Close() // the server closes its browser and exits
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	lines := make(chan string, 1)
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	var endpoint string
	select {
	case line := <-lines:
		if i := strings.Index(line, "ws://"); i >= 0 {
			endpoint = strings.TrimSpace(line[i:])
		} else {
			endpoint = line
		}
	case <-ctx.Done():
		t.Fatalf("the Playwright server printed no endpoint; stderr:\n%s", stderr.String())
	}
	if !strings.HasPrefix(endpoint, "ws://") {
		t.Fatalf("the Playwright server printed %q, want a ws:// endpoint; stderr:\n%s", endpoint, stderr.String())
	}

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<!doctype html><button style="position:absolute;left:10px;top:10px;width:200px;height:50px">Buy now</button>`))
	}))
	defer page.Close()
	d, err := OpenDisplay(ctx, DisplayRequest{Display: DisplaySpec{Backend: Playwright, WSEndpoint: endpoint, Width: 800, Height: 600},
		StartURL: page.URL + "/"})
	if err != nil {
		t.Fatalf("OpenDisplay(playwright at %s) = %v", endpoint, err)
	}
	defer d.Close(context.Background())
	b, ok := d.(*BrowserDisplay)
	if !ok {
		t.Fatalf("OpenDisplay(playwright) is a %T, want a *BrowserDisplay", d)
	}
	shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 800, H: 600}, Format: screen.PNG})
	if err != nil || !strings.HasPrefix(shot.Frame.URL, page.URL) {
		t.Fatalf("Capture() = %v at %q, want the start page %s", err, shot.Frame.URL, page.URL)
	}
	target, err := b.HitTest(ctx, actions.Pt(100, 30))
	if err != nil || !strings.Contains(target.Text+target.Name, "Buy now") {
		t.Errorf("HitTest(100,30) = %+v, %v; want the Buy now button", target, err)
	}
}
