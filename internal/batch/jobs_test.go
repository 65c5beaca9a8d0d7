package batch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/internal/runner"
)

const scriptTask = `"start_url":"about:blank","model":{"provider":"script","turns":[{"say":"done"}]}`

func TestParse(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte("allow: [click]\nhosts: [example.com]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The cassettes the jobs replay must exist: Parse reads them.
	demo, err := os.ReadFile("../../examples/cassettes/demo-anthropic.json")
	if err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "x.json")
	for _, p := range []string{filepath.Join(dir, "c", "x.json"), abs} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, demo, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := strings.Join([]string{
		`{"id":"first",` + scriptTask + `}`,
		``,
		`  {` + scriptTask + `,"name":"named"}  `,
		`{"id":"third",` + scriptTask + `,"policy_file":"policy.yaml","max_steps":3,"timeout":"30s"}`,
		`{"id":"replay","start_url":"demo:/","model":{"provider":"anthropic","cassette":"c/x.json"}}`,
		`{"id":"abs","start_url":"demo:/","model":{"provider":"anthropic","cassette":` + strconv.Quote(abs) + `}}`,
	}, "\n")
	jobs, err := Parse(strings.NewReader(in), dir)
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	type summary struct {
		ID, Name  string
		Line      int
		MaxSteps  int
		Hosts     []string
		Cassette  string
		Timeout   string
		StartURL  string
		TurnCount int
	}
	var got []summary
	for _, j := range jobs {
		got = append(got, summary{j.ID, j.Task.Name, j.Line, j.Task.MaxSteps, j.Task.Policy.Hosts,
			j.Task.Model.Cassette, j.Task.Timeout.String(), j.Task.StartURL, len(j.Task.Model.Turns)})
	}
	want := []summary{
		{"first", "first", 1, 50, nil, "", "10m0s", "about:blank", 1},
		{"line-3", "named", 3, 50, nil, "", "10m0s", "about:blank", 1},
		{"third", "third", 4, 3, []string{"example.com"}, "", "30s", "about:blank", 1},
		{"replay", "replay", 5, 50, nil, filepath.Join(dir, "c/x.json"), "10m0s", "demo:/", 0},
		{"abs", "abs", 6, 50, nil, abs, "10m0s", "demo:/", 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse() jobs (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     error
		msg      string // a substring of the error
	}{
		{"empty", "\n\n", ErrJobs, "no jobs"},
		{"not json", "start_url: about:blank\n", ErrJobs, "line 1: invalid jobs file: want a JSON object"},
		{"array", "[1,2]", ErrJobs, "want a JSON object"},
		{"null", "null", ErrJobs, "want a JSON object"},
		{"numeric id", `{"id":7,` + scriptTask + `}`, ErrJobs, "id must be a string"},
		{"bad id", `{"id":"../x",` + scriptTask + `}`, ErrJobs, `id "../x"`},
		{"dot id", `{"id":".partial",` + scriptTask + `}`, ErrJobs, `id ".partial"`},
		{"reserved id", `{"id":"summary",` + scriptTask + `}`, ErrJobs, "reserved"},
		{"duplicate id", `{"id":"a",` + scriptTask + "}\n" + `{"id":"a",` + scriptTask + `}`, ErrJobs, `line 2: invalid jobs file: id "a" is already used on line 1`},
		{"derived id taken", `{"id":"line-2",` + scriptTask + "}\n{" + scriptTask + `}`, ErrJobs, "already used"},
		{"unknown field", `{"id":"a",` + scriptTask + `,"colour":"red"}`, runner.ErrTask, "job a"},
		{"bad task", `{"id":"a","start_url":"ftp://x","model":{"provider":"script","turns":[{}]}}`, runner.ErrTask, "start_url"},
		{"second line bad", `{` + scriptTask + "}\n{}", runner.ErrTask, "line 2:"},
		{"missing policy file", `{"id":"a",` + scriptTask + `,"policy_file":"nope.yaml"}`, runner.ErrTask, "policy_file"},
		// A cassette that is not there is found before any job runs, on
		// its line, even when an earlier line is fine.
		{"missing cassette", `{` + scriptTask + "}\n" + `{"id":"replay","start_url":"demo:/","model":{"provider":"anthropic","cassette":"nope.json"}}`,
			ErrJobs, "line 2: invalid jobs file: job replay: model.cassette: load cassette: open "},
		{"broken cassette", `{"id":"replay","start_url":"demo:/","model":{"provider":"anthropic","cassette":"broken.json"}}`,
			ErrJobs, "line 1: invalid jobs file: job replay: model.cassette: load cassette "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"version": 1, "interactions": [`), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Parse(strings.NewReader(tt.in), dir)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Parse(%q) error = %v, want %v containing %q", tt.in, err, tt.want, tt.msg)
			}
		})
	}
}

func TestParseLongLine(t *testing.T) {
	in := `{"id":"a",` + scriptTask + `,"task":"` + strings.Repeat("x", maxLine) + `"}`
	_, err := Parse(strings.NewReader(in), "")
	if !errors.Is(err, ErrJobs) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("Parse(a %d-byte line) error = %v, want ErrJobs naming the length", len(in), err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+": line 1:") {
		t.Errorf("Load(%s) error = %v, want one starting with the file and line", path, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want ErrNotExist", err)
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{"", Shard{}, ""},
		{"0/1", Shard{0, 1}, ""},
		{"2/4", Shard{2, 4}, ""},
		{" 3 / 4 ", Shard{3, 4}, ""},
		{"4/4", Shard{}, "I must be 0..3"},
		{"-1/4", Shard{}, "I must be"},
		{"1/0", Shard{}, "N must be"},
		{"1", Shard{}, "want I/N"},
		{"a/b", Shard{}, "want I/N"},
		{"$(JOB_COMPLETION_INDEX)/4", Shard{}, "want I/N"},
	}
	for _, tt := range tests {
		got, err := ParseShard(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseShard(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestShardsPartitionTheJobs checks that the shards of a batch together
// run every job exactly once.
func TestShardsPartitionTheJobs(t *testing.T) {
	var jobs []Job
	for i := range 11 {
		jobs = append(jobs, Job{ID: string(rune('a' + i))})
	}
	for n := 1; n <= 12; n++ {
		seen := map[string]int{}
		for i := range n {
			for _, j := range (Shard{i, n}).Select(jobs) {
				seen[j.ID]++
			}
		}
		for _, j := range jobs {
			if seen[j.ID] != 1 {
				t.Errorf("with %d shards, job %s ran %d times, want 1", n, j.ID, seen[j.ID])
			}
		}
	}
	if got := (Shard{1, 3}).Select(jobs); len(got) != 4 || got[0].ID != "b" || got[1].ID != "e" {
		t.Errorf("Shard{1,3}.Select(a..k) = %v, want b, e, h, k", got)
	}
}

// FuzzParse checks that no jobs file makes Parse panic, and that what it
// accepts has safe, unique ids.
func FuzzParse(f *testing.F) {
	f.Add(`{"id":"a",` + scriptTask + `}`)
	f.Add(`{` + scriptTask + "}\n\n{" + scriptTask + `}`)
	f.Add(`{"id":"a","start_url":"demo:/","model":{"provider":"anthropic","cassette":"x.json"},"timeout":"1s"}`)
	f.Add(`{"id":null}`)
	f.Add(`[]`)
	f.Add("{\"id\":\"\\u0000\"}")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := Parse(strings.NewReader(in), dir)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, j := range jobs {
			if checkID(j.ID) != nil || seen[j.ID] || filepath.Base(j.ID) != j.ID {
				t.Fatalf("Parse(%q) accepted job id %q", in, j.ID)
			}
			seen[j.ID] = true
		}
	})
}
