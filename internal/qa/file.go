package qa

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/internal/yamldoc"
)

// ErrTest marks a test file that cannot be run as written.
var ErrTest = errors.New("invalid test")

// Test is one test file: a runner.Task (natural language for a model, or
// scripted turns) plus the checks that decide whether it passed.
type Test struct {
	Path string // the file it came from
	Task runner.Task

	Checks []Check
	// VNC, when set, runs the test on a desktop over VNC instead of a
	// browser; start_url is then not opened, and DOM checks cannot run.
	VNC *VNCSpec
	// Baselines is the directory of region baselines (default: testdata/
	// beside the file); a test's are in a subdirectory named after it.
	Baselines string
	// Replay is the recording's directory (default: replays/NAME beside the
	// file).
	Replay string
	// Threshold is the replay's divergence threshold (0: the default).
	Threshold float64
}

// VNCSpec says which desktop a test runs on.
type VNCSpec struct {
	Network string `yaml:"network"` // "tcp" (default) or "unix"
	Addr    string `yaml:"addr"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"password_env"`
	// ownSize is set when the file gives no display size: the test takes
	// the desktop's (wiring.VNCScreenSize).
	ownSize bool
}

// Check is one condition on the end state of a run. Exactly one of its
// condition fields is set.
type Check struct {
	Name string `yaml:"name"` // default: described from the condition

	URL      string  `yaml:"url"`       // the page's URL matches this glob ("*" is any run of characters)
	URLMatch string  `yaml:"url_match"` // the page's URL matches this regular expression
	Text     string  `yaml:"text"`      // this text is visible on the page (DOM innerText)
	Element  string  `yaml:"element"`   // an element matches this CSS selector
	Region   *Region `yaml:"region"`    // a screenshot region matches its baseline
	Verdict  string  `yaml:"verdict"`   // the model's last words match this regular expression (e.g. "PASS")
}

// Region is a part of the screen compared with a stored baseline image.
type Region struct {
	Name string  `yaml:"name"` // the baseline's file name, without .png
	X    float64 `yaml:"x"`    // CSS px of the viewport (screen px on a desktop)
	Y    float64 `yaml:"y"`
	W    float64 `yaml:"w"`
	H    float64 `yaml:"h"`
	// Tolerance is the largest share (0..1) of visibly different pixels
	// that still matches; zero means 0.01.
	Tolerance float64 `yaml:"tolerance"`
}

// qaKeys are the keys a test file adds to a task file.
var qaKeys = []string{"checks", "vnc", "baselines", "replay", "replay_threshold"}

// Load reads a test file.
func Load(path string) (Test, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Test{}, err
	}
	t, err := parse(b, filepath.Dir(path))
	if err != nil {
		return Test{}, fmt.Errorf("%s: %w", path, err)
	}
	t.Path = path
	if t.Task.Name == "" {
		t.Task.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	dir := filepath.Dir(path)
	if t.Baselines == "" {
		t.Baselines = filepath.Join(dir, "testdata")
	} else if !filepath.IsAbs(t.Baselines) {
		t.Baselines = filepath.Join(dir, t.Baselines)
	}
	if t.Replay == "" {
		t.Replay = filepath.Join(dir, "replays", t.Task.Name)
	} else if !filepath.IsAbs(t.Replay) {
		t.Replay = filepath.Join(dir, t.Replay)
	}
	return t, nil
}

// hasKey reports whether mapping node m has key k.
func hasKey(m *yaml.Node, k string) bool {
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return true
		}
	}
	return false
}

// parse splits a test file into its QA keys and the task, which
// runner.ParseIn reads (with its defaults and checks).
func parse(b []byte, dir string) (Test, error) {
	// The whole file first, so that an error names its place in it.
	var shape struct {
		Task      runner.Task `yaml:",inline"`
		Checks    []Check     `yaml:"checks"`
		VNC       *VNCSpec    `yaml:"vnc"`
		Baselines string      `yaml:"baselines"`
		Replay    string      `yaml:"replay"`
		Threshold float64     `yaml:"replay_threshold"`
	}
	if err := yamldoc.Decode(b, &shape); err != nil {
		return Test{}, fmt.Errorf("%w: %v", ErrTest, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return Test{}, fmt.Errorf("%w: %v", ErrTest, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Test{}, fmt.Errorf("%w: want a mapping of task fields and checks", ErrTest)
	}
	m := doc.Content[0]
	var t Test
	var rest []*yaml.Node
	sized := false // the file gives the display's size
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var err error
		switch k.Value {
		case "checks":
			err = decodeStrict(v, &t.Checks)
		case "vnc":
			t.VNC = new(VNCSpec)
			err = decodeStrict(v, t.VNC)
		case "baselines":
			err = v.Decode(&t.Baselines)
		case "replay":
			err = v.Decode(&t.Replay)
		case "replay_threshold":
			err = v.Decode(&t.Threshold)
		default:
			rest = append(rest, k, v)
			if k.Value == "display" {
				sized = hasKey(v, "width") || hasKey(v, "height")
			}
		}
		if err != nil {
			return Test{}, fmt.Errorf("%w: %s: %v", ErrTest, k.Value, err)
		}
	}
	m.Content = rest
	tb, err := yaml.Marshal(m)
	if err != nil {
		return Test{}, fmt.Errorf("%w: %v", ErrTest, err)
	}
	if t.Task, err = runner.ParseTest(tb, dir); err != nil {
		return Test{}, err
	}
	if t.VNC != nil && t.VNC.Addr == "" {
		return Test{}, fmt.Errorf("%w: vnc needs an addr", ErrTest)
	}
	if t.VNC != nil {
		t.VNC.ownSize = !sized
	}
	if b := t.Task.Display.Backend; b != wiring.Chromium {
		// Checks read the page through CDP; a desktop is tested through
		// vnc: with its own checks.
		return Test{}, fmt.Errorf("%w: display.backend %s: spotter test runs on Chromium, or on a desktop named by vnc: (spotter run, batch and serve take every backend)", ErrTest, b)
	}
	targets, err := scriptTargets(t.Task.Model.Turns)
	if err != nil {
		return Test{}, err
	}
	if targets && t.VNC != nil {
		return Test{}, fmt.Errorf("%w: a desktop has no DOM to find a target in; give x and y", ErrTest)
	}
	// A cassette the model replays is read now, so that a suite with a
	// missing one stops before its first test.
	if c := t.Task.Model.Cassette; c != "" {
		if _, err := cassette.Load(c); err != nil {
			return Test{}, fmt.Errorf("%w: model.cassette: %v", ErrTest, err)
		}
	}
	if t.Threshold < 0 || t.Threshold >= 1 {
		return Test{}, fmt.Errorf("%w: replay_threshold %g is outside [0, 1)", ErrTest, t.Threshold)
	}
	names := map[string]bool{}
	for i, c := range t.Checks {
		if err := c.validate(); err != nil {
			return Test{}, fmt.Errorf("%w: checks[%d]: %v", ErrTest, i, err)
		}
		if c.Region != nil {
			if names[c.Region.Name] {
				return Test{}, fmt.Errorf("%w: checks[%d]: region name %q is used twice", ErrTest, i, c.Region.Name)
			}
			names[c.Region.Name] = true
		}
		if t.VNC != nil && (c.Text != "" || c.Element != "" || c.URL != "" || c.URLMatch != "") {
			return Test{}, fmt.Errorf("%w: checks[%d]: a desktop has no URL or DOM; use region or verdict checks", ErrTest, i)
		}
	}
	return t, nil
}

func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	return dec.Decode(v)
}

var regionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c Check) validate() error {
	set := 0
	for _, s := range []string{c.URL, c.URLMatch, c.Text, c.Element, c.Verdict} {
		if s != "" {
			set++
		}
	}
	if c.Region != nil {
		set++
	}
	if set != 1 {
		return errors.New("set exactly one of url, url_match, text, element, region, verdict")
	}
	if c.URLMatch != "" {
		if _, err := regexp.Compile(c.URLMatch); err != nil {
			return fmt.Errorf("url_match: %v", err)
		}
	}
	if c.Verdict != "" {
		if _, err := regexp.Compile(c.Verdict); err != nil {
			return fmt.Errorf("verdict: %v", err)
		}
	}
	if r := c.Region; r != nil {
		switch {
		case !regionName.MatchString(r.Name):
			return fmt.Errorf("region: name %q must be letters, digits, '.', '_' or '-'", r.Name)
		case r.X < 0 || r.Y < 0 || r.W < 1 || r.H < 1 || r.W > 4000 || r.H > 4000:
			return fmt.Errorf("region %s: %gx%g at (%g,%g) is not a region of a screen", r.Name, r.W, r.H, r.X, r.Y)
		case r.Tolerance < 0 || r.Tolerance >= 1:
			return fmt.Errorf("region %s: tolerance %g is outside [0, 1)", r.Name, r.Tolerance)
		}
	}
	return nil
}

// Describe names the check for reports.
func (c Check) Describe() string {
	if c.Name != "" {
		return c.Name
	}
	switch {
	case c.URL != "":
		return "url is " + c.URL
	case c.URLMatch != "":
		return "url matches /" + c.URLMatch + "/"
	case c.Text != "":
		return fmt.Sprintf("text %q is visible", c.Text)
	case c.Element != "":
		return "element " + c.Element + " exists"
	case c.Region != nil:
		return "region " + c.Region.Name + " matches its baseline"
	case c.Verdict != "":
		return "verdict matches /" + c.Verdict + "/"
	}
	return "check"
}

// Find expands the arguments of `spotter test`: a file is itself, a
// directory is every .yaml and .yml file below it (skipping testdata and
// replays directories), in name order.
func Find(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != a && (d.Name() == "testdata" || d.Name() == "replays" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no test files in %v", ErrTest, args)
	}
	return slices.Compact(files), nil
}

// globMatch reports whether s matches pattern, where "*" matches any run
// of characters (slashes too) and everything else matches itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	re := make([]string, len(parts))
	for i, p := range parts {
		re[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(re, ".*") + "$").MatchString(s)
}
