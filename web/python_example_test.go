package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// examples/python/spotter_executor.py, the standard library's client of
// the executor API, run by the machine's python3 against a server on a
// real Chromium: a name typed and saved reaches the page, a purchase waits
// for the approval the test gives over HTTP, a denied one and a forbidden
// chord come back as the call's error (Anthropic's tool_result of an action
// that did not run has no image: the model asks for one), and the
// screenshots are the size the session announced.
func TestPythonExample(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs this with python3 on a real Chromium")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	e := newEnv(t, envOpts{timeout: time.Hour})
	shop := newRecordingShop(t)

	cmd := exec.CommandContext(t.Context(), py, filepath.Join("..", "examples", "python", "spotter_executor.py"), shop.URL+"/")
	cmd.Env = append(cmd.Environ(), "SPOTTER_URL="+e.base, "SPOTTER_TOKEN="+testToken, "SPOTTER_DISPLAY=1920x1080")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(v any) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the script ended early: %v; stderr: %s", lines.Err(), stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("the script printed %q: %v", lines.Text(), err)
		}
	}
	var opened struct {
		Session string `json:"session"`
		Image   struct{ W, H int }
	}
	next(&opened)
	if opened.Image.W >= 1920 || opened.Image.W == 0 {
		t.Errorf("image %+v: want the size Spotter chose for Claude, smaller than the 1920x1080 display", opened.Image)
	}
	// The page's controls in CSS pixels, mapped into the session's image.
	at := func(x, y int) [2]int { return [2]int{x * opened.Image.W / 1920, y * opened.Image.H / 1080} }
	type answer struct {
		ToolCallID string   `json:"toolCallId"`
		Error      *string  `json:"error"`
		Text       []string `json:"text"`
		Image      [2]int   `json:"image"`
	}
	n := 0
	do := func(input map[string]any) answer {
		t.Helper()
		n++
		b, _ := json.Marshal(map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": "computer", "input": input})
		if _, err := fmt.Fprintf(stdin, "%s\n", b); err != nil {
			t.Fatal(err)
		}
		var a answer
		next(&a)
		if a.Error == nil && a.Image != [2]int{opened.Image.W, opened.Image.H} {
			t.Errorf("call %d's screenshot is %v, want the session's image %+v", n, a.Image, opened.Image)
		}
		return a
	}
	// decide waits for the session's next approval and decides it.
	decide := func(decision, reason string) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Go(func() {
			resp := e.request("GET", "/session/"+opened.Session+"/events?after=0", nil)
			defer resp.Body.Close()
			r := newSSEReader(resp.Body)
			for {
				ev, err := r.next()
				if err != nil {
					t.Errorf("no permission_request: %v", err)
					return
				}
				var pr struct{ ApprovalID, Rule string }
				if ev.Type != "permission_request" || json.Unmarshal(ev.Data, &pr) != nil {
					continue
				}
				var a struct{ Status string }
				resp := e.request("POST", "/approvals/"+pr.ApprovalID, map[string]string{"decision": decision, "reason": reason})
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &a) == nil {
					if pr.Rule != "purchase" {
						t.Errorf("approval rule %q, want purchase", pr.Rule)
					}
					return // this one was pending; earlier ones answer 409
				}
			}
		})
		return &wg
	}

	name, save, buy := at(300, 120), at(200, 225), at(200, 325)
	for _, in := range []map[string]any{
		{"action": "left_click", "coordinate": name},
		{"action": "type", "text": "Ada Lovelace"},
		{"action": "left_click", "coordinate": save},
	} {
		if a := do(in); a.Error != nil {
			t.Fatalf("%v: %s", in, *a.Error)
		}
	}
	shop.until(t, 1)
	approved := decide("approve", "")
	if a := do(map[string]any{"action": "left_click", "coordinate": buy}); a.Error != nil {
		t.Errorf("approved purchase: %s", *a.Error)
	}
	approved.Wait()
	shop.until(t, 2)
	denied := decide("deny", "over the budget")
	if a := do(map[string]any{"action": "left_click", "coordinate": buy}); a.Error == nil || !strings.Contains(*a.Error, "over the budget") {
		t.Errorf("denied purchase: error %v, want the operator's reason", a.Error)
	}
	denied.Wait()
	if a := do(map[string]any{"action": "key", "text": "ctrl+w"}); a.Error == nil || !strings.Contains(*a.Error, "not allowed") {
		t.Errorf("ctrl+w: error %v, want the policy's refusal", a.Error)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the script: %v; stderr: %s", err, stderr.String())
	}
	if got := shop.records(); fmt.Sprint(got) != "[save:Ada Lovelace buy:]" {
		t.Errorf("the page received %v, want the saved name and one purchase", got)
	}
}

// recordingShop serves a page with a name field, Save and Buy now, whose
// buttons report to the server what they do.
type recordingShop struct {
	*httptest.Server
	mu   sync.Mutex
	got  []string
	more chan struct{}
}

func newRecordingShop(t *testing.T) *recordingShop {
	s := &recordingShop{more: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/record" {
			var rec struct{ Action, Name string }
			_ = json.NewDecoder(r.Body).Decode(&rec)
			s.mu.Lock()
			s.got = append(s.got, rec.Action+":"+rec.Name)
			s.mu.Unlock()
			s.more <- struct{}{}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprint(w, `<!doctype html><html><head><style>body{margin:0;font:20px sans-serif}
#name{position:absolute;left:100px;top:100px;width:400px;height:40px;box-sizing:border-box}
button{position:absolute;left:100px;width:200px;height:50px;font-size:20px}#save{top:200px}#buy{top:300px}</style></head>
<body><input id=name aria-label="Passenger name" autocomplete=off>
<button id=save onclick="send({action:'save',name:document.getElementById('name').value})">Save</button>
<button id=buy onclick="send({action:'buy'})">Buy now</button>
<script>function send(r){fetch('/record',{method:'POST',body:JSON.stringify(r)})}</script></body></html>`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingShop) records() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// until waits for the page's nth report.
func (s *recordingShop) until(t *testing.T, n int) {
	t.Helper()
	for len(s.records()) < n {
		select {
		case <-s.more:
		case <-t.Context().Done():
			t.Fatalf("the page reported %v, want %d reports", s.records(), n)
		}
	}
}
