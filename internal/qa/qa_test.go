package qa

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/draw"
	"golang.org/x/image/font/basicfont"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/junit"
	"github.com/spotter-harness/spotter/internal/replay"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/screentest"
)

const base = `
name: t1
task: t
start_url: "demo:/"
model: {turns: [{say: PASS}]}
`

func TestParse(t *testing.T) {
	got, err := parse([]byte(base+`
checks:
  - url: "http://*/"
  - text: Hello
  - element: "#x"
  - region: {name: card, x: 0, y: 0, w: 10, h: 10}
  - verdict: PASS
replay_threshold: 0.05
`), ".")
	if err != nil {
		t.Fatalf("parse() error = %v", err)
	}
	if len(got.Checks) != 5 || got.Task.Name != "t1" || got.Task.MaxSteps != 50 || got.Threshold != 0.05 {
		t.Errorf("parse() = %+v, want five checks and the task's defaults", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"two conditions", base + "checks: [{text: a, element: b}]\n", "exactly one"},
		{"no condition", base + "checks: [{name: x}]\n", "exactly one"},
		{"unknown check field", base + "checks: [{text: a}, {txt: a}]\n", "checks[1].txt"},
		{"a task field of the wrong kind", base + "max_steps: lots\n", `max_steps`},
		{"a field of the model, by its path", base + "model: {turns: [{say: a}, {sya: b}]}\n", "model.turns[1].sya"},
		{"bad regexp", base + "checks: [{url_match: \"(\"}]\n", "url_match"},
		{"bad region name", base + "checks: [{region: {name: ../x, w: 5, h: 5}}]\n", "name"},
		{"empty region", base + "checks: [{region: {name: a, w: 0, h: 5}}]\n", "region"},
		{"same region twice", base + "checks: [{region: {name: a, w: 5, h: 5}}, {region: {name: a, w: 5, h: 5}}]\n", "twice"},
		{"dom on a desktop", base + "vnc: {addr: \"127.0.0.1:5900\"}\nchecks: [{text: a}]\n", "desktop"},
		{"vnc without addr", base + "vnc: {network: tcp}\n", "addr"},
		{"task error", "task: t\nmodel: {turns: [{say: x}]}\n", "start_url"},
		{"not a mapping", "- a\n- b\n", "mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.yaml), ".")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse() error = %v, want it to mention %q", err, tt.want)
			}
			if err != nil && (strings.Contains(err.Error(), "qa.") || strings.Contains(err.Error(), "runner.") || strings.Contains(err.Error(), "\n")) {
				t.Errorf("parse() error = %q: want one line naming no Go type", err)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"http://127.0.0.1:*/", "http://127.0.0.1:4567/", true},
		{"http://127.0.0.1:*/", "http://127.0.0.1:4567/x", false},
		{"*/done?x=1", "https://a.test/b/done?x=1", true},
		{"https://a.test/", "https://a.test/", true},
		{"https://a.test/", "https://a.test/b", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.yaml", "a.yml", "testdata/x.yaml", "replays/r/x.yaml", "notes.txt"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(base), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Find([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || filepath.Base(got[0]) != "a.yml" || filepath.Base(got[1]) != "b.yaml" {
		t.Errorf("Find() = %v, want a.yml and b.yaml only", got)
	}
	if _, err := Find([]string{filepath.Join(dir, "testdata", "nothing")}); err == nil {
		t.Error("Find(missing) = nil error, want one")
	}
}

// The suite's browser displays evaluate the DOM checks themselves.
var _ Evaluator = (*cdp.Display)(nil)

// stubEval answers every expression with v.
type stubEval struct{ v string }

func (s stubEval) Eval(context.Context, string) (json.RawMessage, error) {
	return json.RawMessage(s.v), nil
}

func TestChecker(t *testing.T) {
	dir := t.TempDir()
	test := Test{Task: mustTask(t).Task, Baselines: filepath.Join(dir, "baselines"), Checks: []Check{
		{URL: "about:*"},
		{URLMatch: "^https://"},
		{Text: "Hello"},
		{Element: "#x"},
		{Verdict: "^PASS"},
		{Region: &Region{Name: "corner", W: 40, H: 30}},
	}}
	c := &checker{test: test, disp: &screentest.Fake{URL: "about:blank"}, eval: stubEval{"true"}, final: "PASS: it works",
		out: dir, update: true}
	got := c.run(t.Context())
	want := []bool{true, false, true, true, true, true}
	for i, r := range got {
		if r.OK != want[i] {
			t.Errorf("check %s: ok = %v (%s), want %v", r.Name, r.OK, r.Detail, want[i])
		}
	}
	// The baseline now exists, and the same screen matches it.
	c.update = false
	if r := c.run(t.Context())[5]; !r.OK || r.Actual == "" {
		t.Errorf("region check against its baseline: %+v, want a match", r)
	}
	// A failing DOM answer and a display without a DOM.
	c.eval = stubEval{`"bad selector: x"`}
	if r := c.run(t.Context())[3]; r.OK || !strings.Contains(r.Detail, "bad selector") {
		t.Errorf("element check with a bad selector: %+v", r)
	}
	c.eval = nil
	if r := c.run(t.Context())[2]; r.OK || !strings.Contains(r.Detail, "no DOM") {
		t.Errorf("text check without a DOM: %+v", r)
	}
	c.test.Baselines = filepath.Join(dir, "none")
	if r := c.run(t.Context())[5]; r.OK || !strings.Contains(r.Detail, "--update-baselines") {
		t.Errorf("region check without a baseline: %+v", r)
	}
}

func mustTask(t *testing.T) Test {
	t.Helper()
	test, err := parse([]byte(base), ".")
	if err != nil {
		t.Fatal(err)
	}
	return test
}

func TestJUnitAndReport(t *testing.T) {
	dir := t.TempDir()
	s := Suite{Passed: 1, Failed: 1, Elapsed: time.Second, Report: ReportFile, JUnit: JUnitFile, Tests: []TestResult{
		{Name: "good", OK: true, Dir: "good", Outcome: harness.Outcome{Stop: harness.StopEndTurn}},
		{Name: "bad <one>", Dir: "bad", Failure: "check text: missing\nsecond line",
			Checks: []CheckResult{{Name: "text", Detail: "missing"}}},
	}}
	if err := writeJUnit(filepath.Join(dir, JUnitFile), s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, JUnitFile))
	var doc junit.Suites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if doc.Tests != 2 || doc.Failures != 1 || len(doc.Suites[0].Cases) != 2 || doc.Suites[0].Cases[1].Failure == nil ||
		doc.Suites[0].Cases[1].Failure.Message != "check text: missing" {
		t.Errorf("junit = %+v, want two cases, the second failing with its first line as message", doc)
	}
	if err := writeReport(filepath.Join(dir, ReportFile), s); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(html), "bad &lt;one&gt;") || !strings.Contains(string(html), "1 passed, 1 failed") {
		t.Errorf("report.html does not show the escaped test name and the counts")
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	if _, err := Run(t.Context(), []string{"x.yaml"}, Options{}); err == nil {
		t.Error("Run() without an output directory = nil error")
	}
	_, err := Run(t.Context(), []string{filepath.Join(t.TempDir(), "missing.yaml")}, Options{Out: t.TempDir()})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run(missing file) error = %v, want not exist", err)
	}
}

// A region that does not match its baseline leaves a diff image whose band
// names its three panels, and the report captions them too.
func TestRegionDiffCaptioned(t *testing.T) {
	dir := t.TempDir()
	test := Test{Task: mustTask(t).Task, Baselines: filepath.Join(dir, "baselines"),
		Checks: []Check{{Region: &Region{Name: "card", W: 160, H: 60}}}}
	// A baseline of another colour than anything the fake shows.
	base := image.NewRGBA(image.Rect(0, 0, 160, 60))
	draw.Draw(base, base.Bounds(), image.NewUniform(color.RGBA{0x10, 0x80, 0x10, 0xff}), image.Point{}, draw.Src)
	png, err := replay.EncodePNG(base)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "baselines", test.Task.Name, "card.png")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &checker{test: test, disp: &screentest.Fake{URL: "about:blank"}, out: dir}
	r := c.run(t.Context())[0]
	if r.OK || r.Diff == "" {
		t.Fatalf("region check against a different baseline: %+v, want a failure with a diff", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, r.Diff))
	if err != nil {
		t.Fatal(err)
	}
	img, err := replay.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if bounds := img.Bounds(); bounds.Dy() != 60+captionBand {
		t.Errorf("diff image is %v, want %d px taller than the region for its captions", bounds, captionBand)
	}
	checkCaptions(t, img, regionCaptions)

	s := Suite{Failed: 1, Tests: []TestResult{{Name: "t1", Dir: "t1", Failure: "check: differs",
		Checks: []CheckResult{{Name: "region card", Detail: "differs", Actual: "t1/checks/card.png", Diff: "t1/checks/card-diff.png"}}}}}
	if err := writeReport(filepath.Join(dir, ReportFile), s); err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	for _, want := range []string{"<span>baseline</span><span>actual</span><span>difference</span>", "Baseline (the stored image), actual (this run's capture), difference (changed pixels in red)"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html does not caption the diff with %q", want)
		}
	}
}

func TestFit(t *testing.T) {
	face := basicfont.Face7x13
	for _, tt := range []struct {
		s     string
		width int
		want  string
	}{
		{"difference", 200, "difference"},
		{"difference", 50, "differ."},
		{"difference", 10, "d"},
		{"difference", 3, ""},
	} {
		if got := fit(face, tt.s, tt.width); got != tt.want {
			t.Errorf("fit(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}

// checkCaptions checks that each panel's part of a diff image's caption band
// has caption text (white pixels) in it.
func checkCaptions(t *testing.T, img image.Image, caps [3]string) {
	t.Helper()
	bounds := img.Bounds()
	pw := (bounds.Dx() - 2*sideGap) / 3
	for i, name := range caps {
		white := 0
		for y := 0; y < captionBand; y++ {
			for x := i * (pw + sideGap); x < i*(pw+sideGap)+pw; x++ {
				if r, g, b, _ := img.At(x, y).RGBA(); r > 0xe000 && g > 0xe000 && b > 0xe000 {
					white++
				}
			}
		}
		if white < 20 {
			t.Errorf("panel %d's caption %q: %d white pixels in the band, want its letters", i, name, white)
		}
	}
}
