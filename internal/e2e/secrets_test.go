package e2e

// The secrets audit: a scripted model signs in on a real login page, once
// typing the password through a {{PASSWORD}} placeholder (Config.Secrets)
// and once typing it literally into the password field (which only the
// gate's hit-test can tell is secret). The page's server must receive the
// password, and no output of the run may hold it: no file of the trace
// (screenshots aside), the report, the debug logs, the Outcome, what the
// model was sent, or the approval requests a panel would show.

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/syncbuf"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// login records what login.html's form sends, by POST or by GET.
type login struct {
	mu         sync.Mutex
	user, pass []string
}

func (l *login) handler(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.user = append(l.user, r.Form.Get("user"))
	l.pass = append(l.pass, r.Form.Get("pass"))
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte("<!doctype html><title>Welcome</title><h1>Welcome back</h1>"))
}

func (l *login) posts() (user, pass []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.user...), append([]string(nil), l.pass...)
}

// modelSeesReflectedSecrets would excuse the model seeing a secret the page
// reflected into its URL. The loop redacts what it sends the model as well
// as what it records, so it is false: the GET cases fail on such a leak.
const modelSeesReflectedSecrets = false

// TestSecretsNeverLeak is the audit: every output of a run that types a
// password is searched for it.
func TestSecretsNeverLeak(t *testing.T) {
	integration(t)
	const user = "alice.audit"
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	d, err := cdp.Open(ctx, cdp.Config{Logger: log})
	cancel()
	if err != nil {
		t.Fatalf("cdp.Open() = %v", err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	posted := &login{}
	srv := serveInjection(t, map[string]http.HandlerFunc{"POST /login": posted.handler, "GET /login": posted.handler})
	host := strings.TrimPrefix(srv.URL, "http://")

	// With GET, the password comes back in the URL of the page that
	// follows, and so in every frame the run records after it.
	tests := []struct {
		name    string
		page    string            // login.html, sending by POST or GET
		typed   string            // what the model types into the password field
		secret  string            // what the page must receive, and no output may hold
		secrets map[string]string // Config.Secrets
		// reflected: the page puts the password in its URL (GET).
		reflected bool
	}{
		{"placeholder/post", "login.html", "{{PASSWORD}}", "S3cret-Plac3holder-77", map[string]string{"PASSWORD": "S3cret-Plac3holder-77"}, false},
		{"literal/post", "login.html", "L1teral-Pa55word-42", "L1teral-Pa55word-42", nil, false},
		{"placeholder/get", "login.html?get", "{{PASSWORD}}", "S3cret-Plac3holder-78", map[string]string{"PASSWORD": "S3cret-Plac3holder-78"}, true},
		{"literal/get", "login.html?get", "L1teral-Pa55word-43", "L1teral-Pa55word-43", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			navigate(t, d, srv.URL+"/"+tt.page)
			_, before := posted.posts()
			typed, _ := json.Marshal(tt.typed)
			// In login.html: the user name field at (40..340, 130..166),
			// the password field at (40..340, 220..256).
			m := script.New([]script.Turn{
				{Say: "I will enter the user name.", Actions: script.Batch(`[{"type":"click","x":190,"y":148},{"type":"type","text":"` + user + `"}]`)},
				{Say: "Now the password.", Actions: script.Batch(`[{"type":"click","x":190,"y":238},{"type":"type","text":` + string(typed) + `}]`)},
				{Say: "And sign in.", Actions: script.Batch(`[{"type":"keypress","keys":["ENTER"]}]`)},
				{Say: "Signed in."},
			}, true)

			// A human approves whatever the gate asks; the requests are
			// what an approval panel would show.
			var (
				reqMu    sync.Mutex
				requests [][]byte
			)
			q := approvals.NewQueue(approvals.QueueConfig{
				OnRequest: func(r approvals.Request) error {
					b, err := json.Marshal(r)
					reqMu.Lock()
					defer reqMu.Unlock()
					requests = append(requests, b)
					return err
				},
				OnDecision: func(r approvals.Request, v approvals.Verdict) error {
					b, err := json.Marshal(struct {
						R approvals.Request
						V approvals.Verdict
					}{r, v})
					reqMu.Lock()
					defer reqMu.Unlock()
					requests = append(requests, b)
					return err
				},
			})
			hctx, stopHuman := context.WithCancel(t.Context())
			var human sync.WaitGroup
			events := q.Subscribe(hctx)
			human.Go(func() {
				for ev := range events {
					if ev.Type == approvals.EventRequest {
						q.Decide(ev.Request.ID, approvals.Verdict{Kind: approvals.Approve, By: "auditor"})
					}
				}
			})
			defer func() { stopHuman(); human.Wait() }()

			policy := actions.Standard()
			policy.Hosts = []string{host}
			g, err := approvals.NewGate(approvals.GateConfig{Queue: q, Session: "secrets", PolicyHosts: policy.Hosts,
				HitTester: d, Dialogs: d, Timeout: 10 * time.Second, Logger: log})
			if err != nil {
				t.Fatalf("NewGate() = %v", err)
			}
			dir := filepath.Join(t.TempDir(), "trace")
			tw, err := trace.Create(dir)
			if err != nil {
				t.Fatalf("trace.Create() = %v", err)
			}
			out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Task: "Sign in as " + user + ".",
				Policy: policy, Approver: g, Trace: tw, Secrets: tt.secrets, Logger: log, ModelName: "script"})
			if cerr := tw.Close(); cerr != nil {
				t.Errorf("trace Close() = %v", cerr)
			}
			if err != nil {
				t.Fatalf("Run() = %v", err)
			}
			if out.Stop != harness.StopEndTurn {
				t.Errorf("Run() stop = %s (%s), want end_turn", out.Stop, out.Err)
			}
			if _, err := trace.WriteReport(dir); err != nil {
				t.Fatalf("WriteReport() = %v", err)
			}

			// The typing happened: the page's server got the password.
			users, passes := posted.posts()
			if got := passes[len(before):]; len(got) != 1 || got[0] != tt.secret || users[len(users)-1] != user {
				t.Fatalf("the login form sent users %q passwords %q, want one of %q with the password", users[len(before):], got, user)
			}

			// The gate marked the password typing secret, and the trace
			// masked it.
			evs, err := trace.Read(dir)
			if err != nil {
				t.Fatalf("trace.Read() = %v", err)
			}
			var secretTyped int
			for _, e := range evs {
				if e.Type == trace.TypeAction && e.Action.Kind == actions.Type && e.Secret && e.Error == "" {
					secretTyped++
				}
			}
			if secretTyped != 1 {
				t.Errorf("trace: %d typing actions marked secret, want 1 (the password field's)", secretTyped)
			}

			// Every output of the run.
			outputs := map[string]string{"logs": logs.String()}
			err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if isImage(b) {
					return nil
				}
				rel, _ := filepath.Rel(dir, p)
				outputs["trace file "+rel] = string(b)
				return nil
			})
			if err != nil {
				t.Fatalf("read the trace: %v", err)
			}
			for _, f := range []string{trace.EventsFile, trace.ReportFile} {
				if _, ok := outputs["trace file "+f]; !ok {
					t.Errorf("trace: no %s", f)
				}
			}
			b, _ := json.Marshal(out)
			outputs["outcome"] = string(b) + "\n" + out.Err + "\n" + out.Text
			outputs["model inputs"] = modelInputs(m.Received)
			reqMu.Lock()
			outputs["approval requests"] = string(bytes.Join(requests, []byte("\n")))
			if len(requests) == 0 {
				t.Error("no approval requests: the password field was not flagged")
			}
			reqMu.Unlock()
			// Controls: the debug logs were captured, and a password the
			// page put in its URL reached the trace masked.
			if !strings.Contains(outputs["logs"], "approval needed") {
				t.Error("the logs lack the gate's debug line: debug logging was not captured")
			}
			if tt.reflected {
				mask := "[typed secret]"
				if tt.secrets != nil {
					mask = "[secret PASSWORD]"
				}
				checkMasked(t, outputs["trace file "+trace.EventsFile], mask)
			}
			for name, s := range outputs {
				i := strings.Index(s, tt.secret)
				if i < 0 {
					continue
				}
				excerpt := s[max(i-120, 0):min(i+len(tt.secret)+40, len(s))]
				if name == "model inputs" && tt.reflected && modelSeesReflectedSecrets {
					t.Logf("known gap (modelSeesReflectedSecrets): the model was sent the password the page put in its URL: …%s…", excerpt)
					continue
				}
				t.Errorf("%s holds the password: …%s…", name, excerpt)
			}
		})
	}
}

// checkMasked checks that events show the page's URL with the password
// replaced by mask.
func checkMasked(t *testing.T, events, mask string) {
	t.Helper()
	if !strings.Contains(events, "pass="+mask) {
		t.Errorf("events.jsonl has no URL with the password masked as pass=%s", mask)
	}
}

// isImage reports whether b is a PNG or JPEG file.
func isImage(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff})
}

// modelInputs renders what the model was sent as text, screenshots'
// pixels aside.
func modelInputs(ins []harness.Input) string {
	var b strings.Builder
	for _, in := range ins {
		b.WriteString(in.Task + "\n")
		if in.Shot != nil {
			f, _ := json.Marshal(in.Shot.Frame)
			b.Write(f)
			b.WriteString(strings.Join(in.Shot.Events, "\n") + "\n")
		}
		for _, r := range in.Results {
			b.WriteString(r.CallID + " " + errString(r.Err) + "\n" + r.Output + "\n")
			b.WriteString(strings.Join(r.Notes, "\n") + "\n")
			if r.Shot != nil {
				f, _ := json.Marshal(r.Shot.Frame)
				b.Write(f)
				b.WriteString(strings.Join(r.Shot.Events, "\n") + "\n")
			}
			if r.Zoom != nil {
				f, _ := json.Marshal(r.Zoom.Frame)
				b.Write(f)
			}
		}
	}
	return b.String()
}
