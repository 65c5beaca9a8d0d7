package e2e

// Least privilege for session browsers (issue 15, finding 5): under
// `spotter serve --isolate none`, a session's Chromium is started with a
// scrubbed environment (no server token, no provider key) and sends every
// request through the egress proxy, which refuses loopback, link-local and
// metadata addresses and the server itself unless the session's policy
// names them exactly, even with hosts: ["*"]. The real binary runs on a
// real Chromium; a page beacons (sendBeacon, fetch, img, WebSocket) to a
// loopback server that records every connection, to the Spotter server
// and to the metadata address.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Secrets in the server's environment, which no browser may inherit.
var privilegeSecrets = map[string]string{
	"SPOTTER_TOKEN":         "privilege-test-token-0123456789",
	"ANTHROPIC_API_KEY":     "sk-ant-privilege-0123456789abcdef",
	"OPENAI_API_KEY":        "sk-openai-privilege-0123456789abcdef",
	"GOOGLE_API_KEY":        "AIza-privilege-0123456789abcdef",
	"AWS_SECRET_ACCESS_KEY": "aws-privilege-0123456789abcdef",
}

// serveLog is an io.Writer safe for a child's output and the test,
// which it tells of every write.
type serveLog struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next write
}

func (s *serveLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// next returns a channel closed by the next write.
func (s *serveLog) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{})
	}
	return s.written
}

func (s *serveLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// beaconPage reaches out to every target in every way a page can without
// a click, tells its own origin it is about to finish with a beacon, and
// then loads /done.
func beaconPage(targets []string, ws string) string {
	list, _ := json.Marshal(targets)
	return `<!doctype html><html><head><title>beacons</title></head><body><p>beaconing</p><script>
const targets = ` + string(list) + `;
for (const u of targets) { try { navigator.sendBeacon(u + '?via=beacon', 'x'); } catch (e) {} }
const waits = [];
for (const u of targets) {
  waits.push(fetch(u + '?via=fetch', {method: 'POST', mode: 'no-cors', body: 'token=x'}).catch(() => {}));
  waits.push(new Promise(r => { const i = new Image(); i.onload = i.onerror = r; i.src = u + '?via=img'; }));
}
waits.push(new Promise(r => { try { const w = new WebSocket('` + ws + `'); w.onerror = w.onclose = w.onopen = r; } catch (e) { r(); } }));
navigator.sendBeacon('/beacon-ok', 'ok');
Promise.all(waits).then(() => { new Image().src = '/done'; });
</script></body></html>`
}

// TestServeNoneBrowserLeastPrivilege runs `spotter serve --isolate none`
// with secrets in its environment and an executor session (policy hosts
// ["*"]) on a page that beacons to loopback, to the server and to the
// metadata address. Nothing arrives at the loopback server, no failed
// login reaches the server's audit, the egress proxy refused every
// target, and no browser process holds a secret in its environment.
func TestServeNoneBrowserLeastPrivilege(t *testing.T) {
	integration(t)
	bin := buildSpotter(t)
	target := newOriginRecorder(t, "")
	targetPort := target.Listener.Addr().(*net.TCPAddr).Port
	page := newBeaconSite(t)
	srv := startServeWithSecrets(t, bin)
	_, serverPort, _ := net.SplitHostPort(strings.TrimPrefix(srv.base, "http://"))

	targets := []string{
		fmt.Sprintf("http://127.0.0.1:%d/beacon", targetPort),
		fmt.Sprintf("http://localhost:%d/beacon", targetPort),
		fmt.Sprintf("http://[::1]:%d/beacon", targetPort),
		srv.base + "/login",
		srv.base + "/healthz",
		"http://169.254.169.254/latest/meta-data/",
	}
	page.setHTML(beaconPage(targets, fmt.Sprintf("ws://127.0.0.1:%d/ws", targetPort)))
	if code, b := srv.api(t, "POST", "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL + "/",
		"policy": map[string]any{"hosts": []string{"*"}}, "display": map[string]any{"width": 800, "height": 600}}); code != http.StatusOK {
		t.Fatalf("POST /executor/sessions = %d %s", code, b)
	}

	// Wait for the page to finish and for the proxy to have refused every
	// target in every way (beacon, fetch, img: three requests each).
	select {
	case <-page.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the page did not finish within 60s; its server saw %q\n%s", page.requests(), srv.stderr.String())
	}
	hostPorts := []string{"127.0.0.1 " + strconv.Itoa(targetPort), "localhost " + strconv.Itoa(targetPort),
		"::1 " + strconv.Itoa(targetPort), "127.0.0.1 " + serverPort, "169.254.169.254 80"}
	srv.waitRefusals(t, target, hostPorts)
	if pageSeen := page.requests(); !containsString(pageSeen, "POST /beacon-ok") {
		// The page's own beacon must arrive, or a refusal proves nothing.
		t.Errorf("the page's own origin saw %q, want its beacon POST /beacon-ok", pageSeen)
	}
	if conns, reqs := target.seen(); conns != 0 || len(reqs) != 0 {
		t.Errorf("the loopback server saw %d connections and requests %q, want none", conns, reqs)
	}
	code, b := srv.api(t, "GET", "/audit", nil)
	if code != http.StatusOK || strings.Contains(string(b), "login_failed") {
		t.Errorf("GET /audit = %d %s, want no failed login: a page's POST /login reached the server", code, b)
	}
	t.Logf("egress refusals: %v", srv.refusals())
	checkBrowsersHoldNoSecret(t, srv.cmd.Process.Pid)
}

// beaconSite serves the beaconing page at / and records every request;
// done is closed when the page loads /done.
type beaconSite struct {
	*httptest.Server
	done chan struct{}

	mu   sync.Mutex
	html string   // the page at /
	seen []string // "METHOD /path" of every request
}

// newBeaconSite starts a beaconSite, closed when the test ends; its page
// is empty until setHTML.
func newBeaconSite(t *testing.T) *beaconSite {
	s := &beaconSite{done: make(chan struct{})}
	var doneOnce sync.Once
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.Path)
		html := s.html
		s.mu.Unlock()
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, html)
		case "/done":
			doneOnce.Do(func() { close(s.done) })
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *beaconSite) setHTML(html string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.html = html
}

// requests returns the requests the site has seen so far.
func (s *beaconSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// secretServer is a `spotter serve --isolate none` with privilegeSecrets
// in its environment.
type secretServer struct {
	cmd    *exec.Cmd
	stderr *serveLog
	exited chan struct{} // closed when the process has exited
	base   string        // its URL
}

// startServeWithSecrets starts `spotter serve --isolate none` on loopback
// with privilegeSecrets in its environment and waits until it listens. It
// is stopped (SIGTERM, then SIGKILL after 20s) when the test ends.
func startServeWithSecrets(t *testing.T, bin string) *secretServer {
	cmd := exec.Command(bin, "serve", "--isolate", "none", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "-v")
	cmd.Env = os.Environ()
	for k, v := range privilegeSecrets {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	srv := &secretServer{cmd: cmd, stderr: &serveLog{}, exited: make(chan struct{})}
	cmd.Stderr = srv.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "spotter: listening on "); ok {
				listening <- u
			}
		}
		cmd.Wait()
		close(srv.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-srv.exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-srv.exited
		}
	})
	select {
	case srv.base = <-listening:
	case <-srv.exited:
		t.Fatalf("spotter serve exited:\n%s", srv.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("spotter serve did not listen within 60s")
	}
	return srv
}

// api calls the server's API with its token and returns the status and
// the body.
func (srv *secretServer) api(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, srv.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+privilegeSecrets["SPOTTER_TOKEN"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// refusals counts the egress proxy's refusals in the server's log, by
// "host port".
func (srv *secretServer) refusals() map[string]int {
	n := map[string]int{}
	for _, line := range strings.Split(srv.stderr.String(), "\n") {
		if !strings.Contains(line, `msg="egress refused"`) {
			continue
		}
		host, port := logField(line, "host"), logField(line, "port")
		n[host+" "+port]++
	}
	return n
}

// waitRefusals waits, for at most 60s, until the server has logged at
// least three egress refusals for each of hostPorts ("host port"). target
// is the loopback server, whose requests a failure shows.
func (srv *secretServer) waitRefusals(t *testing.T, target *originRecorder, hostPorts []string) {
	deadline := time.After(60 * time.Second)
	for {
		wrote := srv.stderr.next()
		n := srv.refusals()
		missing := false
		for _, hp := range hostPorts {
			missing = missing || n[hp] < 3
		}
		if !missing {
			return
		}
		select {
		case <-wrote: // the server logged something: look again
		case <-srv.exited:
			t.Fatalf("spotter serve exited:\n%s", srv.stderr.String())
		case <-deadline:
			conns, reqs := target.seen()
			t.Fatalf("egress refusals %v, want at least 3 for each of %q; the loopback server saw %d connections, requests %q\n%s",
				n, hostPorts, conns, reqs, srv.stderr.String())
		}
	}
}

// checkBrowsersHoldNoSecret checks that the browser processes under the
// server (process serverPID) hold no secret in their environment, go
// through the egress proxy and listen on no debugging port; the server's
// own environment holds its token, so the check can tell.
func checkBrowsersHoldNoSecret(t *testing.T, serverPID int) {
	serverEnv, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", serverPID))
	if err != nil || !bytes.Contains(serverEnv, []byte(privilegeSecrets["SPOTTER_TOKEN"])) {
		t.Fatalf("the server's own environment (err %v) lacks its token: this check cannot tell", err)
	}
	browsers := descendants(t, serverPID, "chrom")
	if len(browsers) == 0 {
		t.Fatalf("no browser process under the server (pid %d)", serverPID)
	}
	proxied := false
	for _, pid := range browsers {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue // exited meanwhile
		}
		for k, v := range privilegeSecrets {
			if bytes.Contains(env, []byte(v)) || bytes.Contains(env, []byte(k+"=")) {
				t.Errorf("browser process %d has %s in its environment", pid, k)
			}
		}
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		proxied = proxied || bytes.Contains(cl, []byte("--proxy-server=http://127.0.0.1:"))
		if bytes.Contains(cl, []byte("remote-debugging-port")) {
			t.Errorf("browser process %d listens on a debugging port: %s", pid, bytes.ReplaceAll(cl, []byte{0}, []byte{' '}))
		}
	}
	if !proxied {
		t.Errorf("no browser process of %v runs with --proxy-server", browsers)
	}
	t.Logf("%d browser processes checked", len(browsers))
}

// logField returns the value of key in a slog text line.
func logField(line, key string) string {
	_, rest, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	if strings.HasPrefix(rest, `"`) {
		if v, err := strconv.QuotedPrefix(rest); err == nil {
			s, _ := strconv.Unquote(v)
			return s
		}
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// descendants returns the processes below pid whose command name contains
// name.
func descendants(t *testing.T, pid int, name string) []int {
	t.Helper()
	parent := map[int]int{}
	comm := map[int]string{}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		p, _ := strconv.Atoi(filepath.Base(d))
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		j := bytes.IndexByte(stat, '(')
		if i < 0 || j < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		parent[p], _ = strconv.Atoi(f[1])
		comm[p] = string(stat[j+1 : i])
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				if strings.Contains(comm[p], name) {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}
