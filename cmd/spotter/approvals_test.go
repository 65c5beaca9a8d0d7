package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/approvals"
)

func TestApprovalsFor(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := write("all.yaml", "supervise: all\nhosts: [partner.example]\n")
	none := write("none.yaml", "supervise: none\n")
	bad := write("bad.yaml", "hosts: [partner.example]\ndisable:\n  - send\n  - shout\n")
	tests := []struct {
		name    string
		mode    string
		rules   string
		want    approvals.Supervise // "" with wantErr "": no approver
		hosts   []string
		wantErr string
	}{
		{"default", "", "", approvals.SuperviseFlagged, nil, ""},
		{"all", "all", "", approvals.SuperviseAll, nil, ""},
		{"none", "none", "", "", nil, ""},
		{"none beats the file", "none", all, "", nil, ""},
		{"the file's supervise", "", all, approvals.SuperviseAll, []string{"partner.example"}, ""},
		{"the flag beats the file", "flagged", all, approvals.SuperviseFlagged, []string{"partner.example"}, ""},
		{"the file's none keeps safety checks", "", none, approvals.SuperviseNone, nil, ""},
		{"unknown mode", "some", "", "", nil, `--approvals "some": want flagged, all or none`},
		{"bad rules file", "", bad, "", nil, "--rules: " + bad + ":4: "},
		{"missing rules file", "", filepath.Join(dir, "nope.yaml"), "", nil, "nope.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := approvalsFor(tt.mode, tt.rules)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("approvalsFor(%q, %q) = %v, want an error with %q", tt.mode, tt.rules, err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("approvalsFor(%q, %q) = %v", tt.mode, tt.rules, err)
			case tt.want == "":
				if got != nil {
					t.Errorf("approvalsFor(%q, %q) = %+v, want no approver", tt.mode, tt.rules, got)
				}
				return
			case got == nil:
				t.Fatalf("approvalsFor(%q, %q) = no approver, want supervise %s", tt.mode, tt.rules, tt.want)
			}
			if got.Rules.Supervise != tt.want || got.Asker != nil {
				t.Errorf("approvalsFor(%q, %q) = supervise %q, asker %v; want %q and no asker",
					tt.mode, tt.rules, got.Rules.Supervise, got.Asker, tt.want)
			}
			if strings.Join(got.Rules.Hosts, ",") != strings.Join(tt.hosts, ",") {
				t.Errorf("approvalsFor(%q, %q) hosts = %v, want %v", tt.mode, tt.rules, got.Rules.Hosts, tt.hosts)
			}
			if err := got.Rules.Validate(); err != nil {
				t.Errorf("approvalsFor(%q, %q) rules do not validate: %v", tt.mode, tt.rules, err)
			}
		})
	}
}

// TestApprovalFlagErrors checks that run and serve refuse bad approval
// flags at start, with exit code 2 and the rules file's name and line,
// before they open a browser or a port.
func TestApprovalFlagErrors(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yaml")
	bad := filepath.Join(dir, "rules.yaml")
	for path, body := range map[string]string{
		task: "task: t\nstart_url: about:blank\nmodel: {turns: [{say: hi}]}\n",
		bad:  "supervise: flagged\nrules:\n  - name: transfer\n    reason: moves money\n    url: [\"(\"]\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"run with a bad rules file", []string{"run", task, "--rules", bad}, bad + ":3: approval rules: rules[0]: transfer: url[0]"},
		{"run with the flag first", []string{"run", "--rules", bad, task}, bad + ":3:"},
		{"run with a missing rules file", []string{"run", task, "--rules", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"run with an unknown mode", []string{"run", task, "--approvals", "sometimes"}, `"sometimes": want flagged, all or none`},
		{"serve with a bad rules file", []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--rules", bad},
			bad + ":3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), tt.args, &out, &errOut)
			var ee exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Fatalf("run(%q) = %v, want exit code 2", tt.args, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %q, want it to contain %q", tt.args, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve with a bad rules file made its data directory (%v): it must stop before starting", err)
	}
}
