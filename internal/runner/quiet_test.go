package runner

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/isolate/local"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// egressLog records the hosts an egress proxy was asked for, besides the
// page's, and when each was first asked for.
type egressLog struct {
	mu    sync.Mutex
	page  string
	start time.Time
	first map[string]time.Duration
}

func newEgressLog(page string) *egressLog {
	return &egressLog{page: page, start: time.Now(), first: map[string]time.Duration{}}
}

func (l *egressLog) record(d egress.Decision) {
	if d.Host+":"+d.Port == l.page {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.first[d.Host]; !ok {
		l.first[d.Host] = time.Since(l.start).Round(100 * time.Millisecond)
	}
}

func (l *egressLog) hosts() map[string]time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.first)
}

// proxied starts an egress proxy on loopback that allows only page, and
// returns the flags that send a browser's requests through it.
func proxied(t *testing.T, page string, l *egressLog) []string {
	t.Helper()
	sb, err := local.Start(t.Context(), isolate.Config{Egress: egress.Policy{Allow: []string{page}}, OnDecision: l.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return []string{"--proxy-server=http://" + sb.ProxyAddr(), "--proxy-bypass-list=<-loopback>"}
}

// backgroundHosts are the hosts a Chromium of no quiet flags asks for by
// itself within a minute of its start (Debian's chromium, with the API
// keys its launcher exports): account lookups, component updates, network
// time, autofill's field types and optimization hints.
var backgroundHosts = []string{"accounts.google.com", "update.googleapis.com", "clients2.google.com",
	"content-autofill.googleapis.com", "optimizationguide-pa.googleapis.com"}

// TestBrowsersMakeNoTrafficOfTheirOwn: every Chromium Spotter launches
// (screen/cdp's headless shell and full Chromium, screen/playwright's, the
// one in a containerd sandbox, a desktop's) asks its egress proxy for the
// page it shows and nothing else. A control, Debian's chromium started
// plainly behind a proxy of its own at the same time, shows what they would
// ask for: the test watches until the control has asked for its
// background hosts (or a minute has passed, which fails it), so each
// display had as long to do the same.
func TestBrowsersMakeNoTrafficOfTheirOwn(t *testing.T) {
	isolatetest.Integration(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A form with an e-mail and a password field: what autofill
		// asks its server about.
		fmt.Fprint(w, `<!doctype html><html lang="de"><form><input name=email autocomplete=email><input type=password>`+
			`<button>Anmelden</button></form><p>Willkommen auf der Seite.</p></html>`)
	}))
	defer page.Close()
	addr := page.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	logs := map[string]*egressLog{}
	open := func(name string, start func(l *egressLog) (func(), error)) {
		l := newEgressLog(addr)
		logs[name] = l
		stop, err := start(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(stop)
	}

	// The control: Debian's chromium with no flags but what a headless
	// run behind a proxy needs.
	control := newEgressLog(addr)
	cmd := exec.Command("chromium", append(proxied(t, addr, control), "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), page.URL+"/")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the control chromium: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})

	navigate := func(d interface {
		Perform(context.Context, screen.Mapped) error
	}) error {
		return d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: page.URL + "/"}})
	}
	open("screen/cdp, headless shell", func(l *egressLog) (func(), error) {
		d, err := cdp.Open(ctx, cdp.Config{Mode: cdp.FrameControl, Flags: proxied(t, addr, l)})
		if err != nil {
			return nil, err
		}
		return func() { d.Close(context.Background()) }, navigate(d)
	})
	open("screen/cdp, full Chromium", func(l *egressLog) (func(), error) {
		d, err := cdp.Open(ctx, cdp.Config{Mode: cdp.Screencast, Exec: "chromium", Flags: proxied(t, addr, l)})
		if err != nil {
			return nil, err
		}
		return func() { d.Close(context.Background()) }, navigate(d)
	})
	open("screen/playwright", func(l *egressLog) (func(), error) {
		p := egress.Policy{Allow: []string{addr}}
		d, err := wiring.OpenDisplay(ctx, wiring.DisplayRequest{Display: wiring.DisplaySpec{Backend: wiring.Playwright},
			StartURL: page.URL + "/", HostEgress: &p, OnDecision: l.record})
		if err != nil {
			return nil, err
		}
		return func() { d.Close(context.Background()) }, nil
	})
	open("a containerd sandbox", func(l *egressLog) (func(), error) {
		d, err := wiring.OpenDisplay(ctx, wiring.DisplayRequest{StartURL: page.URL + "/", Sandboxes: sandboxesFor(t, isolate.Containerd),
			Egress: egress.Policy{Allow: []string{addr}}, OnDecision: l.record})
		if err != nil {
			return nil, err
		}
		return func() { d.Close(context.Background()) }, nil
	})
	open("a desktop's Chromium", func(l *egressLog) (func(), error) {
		app := desktop.Chromium(page.URL + "/")
		app.Argv = slices.Insert(app.Argv, len(app.Argv)-1, proxied(t, addr, l)...)
		d, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 800, H: 600}, Apps: []desktop.App{app}, Logger: isolatetest.Logger()})
		if err != nil {
			return nil, err
		}
		return func() { d.Close() }, nil
	})

	// Watch until the control has asked for every background host.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		seen := control.hosts()
		missing := slices.DeleteFunc(slices.Clone(backgroundHosts), func(h string) bool { _, ok := seen[h]; return ok })
		if len(missing) == 0 {
			t.Logf("the control asked for %v (time since its start)", seen)
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the control chromium asked only for %v, not %v: the test cannot tell a quiet browser from one that was not watched long enough",
				seen, strings.Join(missing, ", "))
		}
	}
	for name, l := range logs {
		if h := l.hosts(); len(h) > 0 {
			t.Errorf("%s asked its egress proxy for %v besides the page", name, h)
		}
	}
}
