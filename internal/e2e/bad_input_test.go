package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/internal/syncbuf"
)

// goTypes matches what would show a Go type, or yaml.v3's own words, in
// an error meant for a person.
var goTypes = regexp.MustCompile(`\b(runner|qa|actions|approvals|wiring|batch|session|script)\.[A-Z]|!!(str|seq|map|int)|unmarshal errors|not found in type`)

// badTask is a task file with one change made to a runnable one.
func badTask(change string) string {
	return "name: bad\ntask: t\nstart_url: about:blank\nmodel:\n  turns:\n    - say: a\n    - say: b\n" + change
}

// TestBadInputsInWords runs bad inputs through the binary's entry points
// (run, batch, serve and mcp, and serve's HTTP API): each is refused at
// once with one line that says why in words (no Go type, no usage dump),
// exit code 2 or HTTP 400. Every command is bounded by a context: one that
// does not answer in time (the negative timeout that hung cdp.Launch) fails
// the test instead of hanging it.
func TestBadInputsInWords(t *testing.T) {
	integration(t)
	bin := buildSpotter(t)
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good.yaml", badTask(""))
	goodJobs := file("good.jsonl", `{"id": "ok", "task": "t", "start_url": "about:blank", "model": {"turns": [{"say": "a"}]}}`+"\n")
	tasks := map[string]string{
		"unknown field":          file("unknown.yaml", badTask("colour: red\n")),
		"a turn's unknown field": file("turn.yaml", badTask("    - sya: c\n")),
		"a script action":        file("action.yaml", badTask("    - actions: [{type: click, x: abc, y: 1}]\n")),
		"negative timeout":       file("negative.yaml", badTask("timeout: -5s\n")),
		"absurd timeout":         file("absurd.yaml", badTask("timeout: 9000h\n")),
		"scheme in a host":       file("scheme.yaml", badTask("policy: {hosts: ['http://x']}\n")),
		"wildcard port":          file("port.yaml", badTask("policy: {hosts: ['*:*']}\n")),
		"zone":                   file("zone.yaml", badTask("policy: {hosts: ['[::1%eth0]']}\n")),
	}
	want := map[string]string{
		"unknown field":          "colour (line 8): unknown field; the fields here are",
		"a turn's unknown field": "model.turns[2].sya (line 8): unknown field",
		"a script action":        `model.turns[2].actions[0]: click: "x" must be a number`,
		"negative timeout":       "timeout -5s is negative",
		"absurd timeout":         "timeout 9000h0m0s is outside 1s..24h0m0s",
		"scheme in a host":       `policy: hosts[0]: host pattern "http://x"`,
		"wildcard port":          `policy: hosts[0]: host pattern "*:*"`,
		"zone":                   `address "::1%eth0" has a zone`,
	}
	jobs := map[string]string{
		"unknown field":    `{"id": "j1", "task": "t", "start_url": "about:blank", "model": {"turns": [{"say": "a"}]}, "colour": "red"}`,
		"a script action":  `{"id": "j1", "task": "t", "start_url": "about:blank", "model": {"turns": [{"say": "a"}, {"actions": [{"type": "click", "x": "abc", "y": 1}]}]}}`,
		"negative timeout": `{"id": "j1", "task": "t", "start_url": "about:blank", "timeout": "-5s", "model": {"turns": [{"say": "a"}]}}`,
		"absurd timeout":   `{"id": "j1", "task": "t", "start_url": "about:blank", "timeout": "9000h", "model": {"turns": [{"say": "a"}]}}`,
		"scheme in a host": `{"id": "j1", "task": "t", "start_url": "about:blank", "policy": {"hosts": ["http://x"]}, "model": {"turns": [{"say": "a"}]}}`,
		"wildcard port":    `{"id": "j1", "task": "t", "start_url": "about:blank", "policy": {"hosts": ["*:*"]}, "model": {"turns": [{"say": "a"}]}}`,
		"zone":             `{"id": "j1", "task": "t", "start_url": "about:blank", "policy": {"hosts": ["[::1%eth0]"]}, "model": {"turns": [{"say": "a"}]}}`,
	}
	jobWant := map[string]string{
		"unknown field":    "line 1: job j1: invalid spec: colour: unknown field",
		"a script action":  `model.turns[1].actions[0]: click: "x" must be a number`,
		"negative timeout": "timeout -5s is negative",
		"absurd timeout":   "timeout 9000h0m0s is outside 1s..24h0m0s",
		"scheme in a host": `policy: hosts[0]: host pattern "http://x"`,
		"wildcard port":    `policy: hosts[0]: host pattern "*:*"`,
		"zone":             `address "::1%eth0" has a zone`,
	}
	policies := map[string]string{
		"scheme in a host": file("p-scheme.yaml", "hosts: [example.com, 'http://x']\n"),
		"wildcard port":    file("p-port.yaml", "hosts: ['*:*']\n"),
		"zone":             file("p-zone.yaml", "hosts: ['[::1%eth0]']\n"),
		"unknown field":    file("p-unknown.yaml", "allow: [click]\nallowed: [type]\n"),
	}
	policyWant := map[string]string{
		"scheme in a host": `hosts[1]: host pattern "http://x"`,
		"wildcard port":    `hosts[0]: host pattern "*:*"`,
		"zone":             `address "::1%eth0" has a zone`,
		"unknown field":    "allowed (line 2): unknown field",
	}
	rules := map[string]string{
		"negative timeout": file("r-negative.yaml", "timeout: -5s\n"),
		"absurd timeout":   file("r-absurd.yaml", "timeout: 87600h\n"),
		"unknown field":    file("r-unknown.yaml", "supervise: flagged\nrules:\n  - {name: r, reason: why, target: {txt: buy}}\n"),
		"zone":             file("r-zone.yaml", "hosts: ['[::1%eth0]']\n"),
	}
	rulesWant := map[string]string{
		"negative timeout": "timeout -5s is negative",
		"absurd timeout":   "timeout 87600h0m0s is longer than 24h0m0s",
		"unknown field":    "rules[0].target.txt (line 3): unknown field",
		"zone":             `address "::1%eth0" has a zone`,
	}

	type badCmd struct {
		name string
		args []string
		want string
	}
	var cmds []badCmd
	for _, c := range []string{"run", "batch", "serve", "mcp"} {
		// what the command needs besides its flags
		input := map[string][]string{"run": {good}, "batch": {goodJobs}}[c]
		cmds = append(cmds,
			badCmd{c + ": a flag it does not have", append([]string{c, "--bogus"}, input...), "flag provided but not defined: -bogus; see 'spotter " + c + " -h'"},
			badCmd{c + ": an --isolate mode that does not exist", append([]string{c, "--isolate", "sandbox"}, input...), `--isolate "sandbox": want containerd, local, none or auto`},
		)
		for name, f := range rules {
			cmds = append(cmds, badCmd{c + ": rules, " + name, append([]string{c, "--rules", f}, input...), rulesWant[name]})
		}
	}
	for name, f := range tasks {
		cmds = append(cmds, badCmd{"run: task file, " + name, []string{"run", f}, want[name]})
	}
	for name, line := range jobs {
		cmds = append(cmds, badCmd{"batch: job, " + name, []string{"batch", file("jobs-"+strings.ReplaceAll(name, " ", "-")+".jsonl", line+"\n")}, jobWant[name]})
	}
	for _, p := range []string{"0", "-2"} {
		cmds = append(cmds, badCmd{"batch: --parallel " + p, []string{"batch", "--parallel", p, goodJobs},
			"--parallel " + p + ": want 1 or more jobs at a time; see 'spotter batch -h'"})
	}
	for name, f := range policies {
		cmds = append(cmds, badCmd{"mcp: --policy, " + name, []string{"mcp", "--policy", f}, policyWant[name]})
		cmds = append(cmds, badCmd{"run: policy_file, " + name, []string{"run", file("task-"+filepath.Base(f), badTask("policy_file: "+f+"\n"))}, policyWant[name]})
	}
	cmds = append(cmds,
		badCmd{"mcp: --display with an unknown field", []string{"mcp", "--display", "{backend: chromium, colour: red}"}, "--display: colour: unknown field"},
		badCmd{"serve: a negative --approval-timeout", []string{"serve", "--approval-timeout", "-1s"}, "--approval-timeout -1s: want 0s to 24h0m0s; see 'spotter serve -h'"},
		badCmd{"serve: a negative --drain-timeout", []string{"serve", "--drain-timeout", "-1s"}, "--drain-timeout -1s: want 0s to 1h0m0s"},
		badCmd{"run: no task", []string{"run"}, "run needs a task file or --task; see 'spotter run -h'"},
	)

	for _, c := range cmds {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each command is a process of its own
			// serve and mcp would start serving if they took the input:
			// their data and address are throwaway ones.
			args := c.args
			switch args[0] {
			case "serve":
				args = append(args, "--addr", "127.0.0.1:0", "--data", t.TempDir())
			case "mcp":
				args = append(args, "--http", "127.0.0.1:0")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = t.TempDir()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("spotter %q did not exit within 60s (stderr %q)", args, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("spotter %q = %v, want exit code 2", args, err)
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "spotter: ") {
				t.Errorf("spotter %q wrote %d lines to stderr, want one \"spotter: ...\" line:\n%s", args, strings.Count(msg, "\n")+1, msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("spotter %q said %q, want it to say %q", args, msg, c.want)
			}
			if goTypes.MatchString(msg) {
				t.Errorf("spotter %q said %q: a Go type or the YAML decoder's words", args, msg)
			}
		})
	}

	t.Run("serve's API", func(t *testing.T) {
		base, token, _ := startServeBinary(t, bin)
		specs := []struct{ name, body, want string }{
			{"scheme in a policy host", `{"model": {"provider": "script", "turns": [{"say": "a"}]}, "policy": {"allow": ["click"], "hosts": ["http://x"]}}`, `policy: hosts[0]: host pattern \"http://x\"`},
			{"wildcard port in a policy host", `{"model": {"provider": "script", "turns": [{"say": "a"}]}, "policy": {"allow": ["click"], "hosts": ["*:*"]}}`, `host pattern \"*:*\"`},
			{"zone in a policy host", `{"model": {"provider": "script", "turns": [{"say": "a"}]}, "policy": {"allow": ["click"], "hosts": ["[::1%eth0]"]}}`, `has a zone`},
			{"negative approval timeout", `{"model": {"provider": "script", "turns": [{"say": "a"}]}, "approvals": {"rules": {"timeout": "-5s"}}}`, "timeout -5s is negative"},
			{"absurd approval timeout", `{"model": {"provider": "script", "turns": [{"say": "a"}]}, "approvals": {"rules": {"timeout": "87600h"}}}`, "longer than 24h0m0s"},
			{"zone in the rules' hosts", `{"model": {"provider": "script", "turns": [{"say": "a"}]}, "approvals": {"rules": {"hosts": ["[::1%eth0]"]}}}`, "has a zone"},
			{"a script action", `{"model": {"provider": "script", "turns": [{"say": "a"}, {"actions": [{"type": "click", "x": "abc", "y": 1}]}]}}`, `model.turns[1].actions[0]: click: \"x\" must be a number`},
		}
		for _, s := range specs {
			t.Run(s.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/session", strings.NewReader(s.body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("PUT /session: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte(s.want)) {
					t.Errorf("PUT /session with %s = %s %s, want 400 saying %s", s.name, resp.Status, body, s.want)
				}
				if goTypes.Match(body) || bytes.Contains(body, []byte("internal error")) {
					t.Errorf("PUT /session with %s answered %s: a Go type or an internal error", s.name, body)
				}
			})
		}
	})
}

// startServeBinary runs `spotter serve` from bin, in its default
// isolation, until the test ends, and returns its base URL, its token and
// what it writes to stderr.
func startServeBinary(t *testing.T, bin string) (base, token string, stderr *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir())
	cmd.Dir = t.TempDir()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		<-exited
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for base == "" || token == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("spotter serve exited before it printed its address and token; stderr:\n%s", stderr.String())
			}
			if u, ok := strings.CutPrefix(line, "spotter: listening on "); ok {
				base = u
			}
			if tok, ok := strings.CutPrefix(line, "spotter: token "); ok {
				token = tok
			}
		case <-ctx.Done():
			t.Fatalf("spotter serve printed no address and token within 2m; stderr:\n%s", stderr.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	return base, token, stderr
}
