package batch_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/internal/batch"
	"github.com/spotter-harness/spotter/internal/runner"
)

// node is an XML element, decoded generically so the test sees exactly
// what a CI system's parser sees.
type node struct {
	name     string
	attrs    map[string]string
	children []*node
	text     string
}

func parseXML(t *testing.T, r io.Reader) *node {
	t.Helper()
	dec := xml.NewDecoder(r)
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("junit.xml is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.children = append(top.children, n)
			} else if root != nil {
				t.Fatalf("junit.xml has a second root element <%s>", n.name)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if root == nil {
		t.Fatal("junit.xml has no root element")
	}
	return root
}

// The JUnit schema's rules (the Ant format as CI systems read it, and the
// stricter common XSD): required attributes, their types, and which
// children an element may have, in order.
var (
	timestampPattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)
	decimalPattern   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
)

type attrKind int

const (
	token     attrKind = iota // a non-empty string
	count                     // a non-negative integer
	decimal                   // seconds, xs:decimal, no exponent
	timestamp                 // ISO 8601 without a time zone
	anyString
)

type elementRule struct {
	required map[string]attrKind
	optional map[string]attrKind
	children []string // allowed children, in the order they must come
	single   []string // children of which at most one of all may appear
}

var junitSchema = map[string]elementRule{
	"testsuites": {
		optional: map[string]attrKind{"name": anyString, "tests": count, "failures": count, "errors": count, "skipped": count, "disabled": count, "time": decimal},
		children: []string{"testsuite"},
	},
	"testsuite": {
		required: map[string]attrKind{"name": token, "tests": count, "failures": count, "errors": count, "time": decimal,
			"timestamp": timestamp, "hostname": token, "id": count, "package": token},
		optional: map[string]attrKind{"skipped": count, "disabled": count},
		children: []string{"properties", "testcase", "system-out", "system-err"},
	},
	"properties": {children: []string{"property"}},
	"property":   {required: map[string]attrKind{"name": token, "value": anyString}},
	"testcase": {
		required: map[string]attrKind{"name": token, "classname": token, "time": decimal},
		children: []string{"skipped", "error", "failure", "system-out", "system-err"},
		single:   []string{"skipped", "error", "failure"},
	},
	"failure":    {required: map[string]attrKind{"type": token}, optional: map[string]attrKind{"message": anyString}},
	"error":      {required: map[string]attrKind{"type": token}, optional: map[string]attrKind{"message": anyString}},
	"skipped":    {optional: map[string]attrKind{"message": anyString}},
	"system-out": {},
	"system-err": {},
}

// validate checks n and its subtree against junitSchema, reporting every
// violation with the element's path.
func validate(t *testing.T, n *node, path string) {
	t.Helper()
	path += "/" + n.name
	rule, ok := junitSchema[n.name]
	if !ok {
		t.Errorf("%s: element not in the JUnit schema", path)
		return
	}
	for name, kind := range rule.required {
		v, ok := n.attrs[name]
		if !ok {
			t.Errorf("%s: missing required attribute %q", path, name)
			continue
		}
		checkAttr(t, path, name, v, kind)
	}
	for name, v := range n.attrs {
		if _, req := rule.required[name]; req {
			continue
		}
		kind, ok := rule.optional[name]
		if !ok {
			t.Errorf("%s: attribute %q not in the schema", path, name)
			continue
		}
		checkAttr(t, path, name, v, kind)
	}
	pos, singles := 0, 0
	for _, c := range n.children {
		i := indexOf(rule.children, c.name)
		switch {
		case i < 0:
			t.Errorf("%s: child <%s> not allowed", path, c.name)
		case i < pos:
			t.Errorf("%s: child <%s> out of order", path, c.name)
		default:
			pos = i
		}
		if indexOf(rule.single, c.name) >= 0 {
			singles++
		}
		validate(t, c, path)
	}
	if singles > 1 {
		t.Errorf("%s: %d of %v, want at most one", path, singles, rule.single)
	}
}

func checkAttr(t *testing.T, path, name, v string, kind attrKind) {
	t.Helper()
	bad := false
	switch kind {
	case token:
		bad = strings.TrimSpace(v) == ""
	case count:
		n, err := strconv.Atoi(v)
		bad = err != nil || n < 0
	case decimal:
		bad = !decimalPattern.MatchString(v)
	case timestamp:
		bad = !timestampPattern.MatchString(v)
	}
	if bad {
		t.Errorf("%s: attribute %s=%q is not a valid value", path, name, v)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func childrenNamed(n *node, name string) []*node {
	var out []*node
	for _, c := range n.children {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

func TestJUnitFollowsTheSchema(t *testing.T) {
	dir := t.TempDir()
	f := &fake{}
	// A finished job first, so that the batch reuses one.
	if _, err := batch.Run(t.Context(), jobs("reused:pass"), batch.Config{Out: dir, Runner: f.run}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	runOne := func(ctx2 context.Context, tk runner.Task, o runner.Options) (runner.Result, error) {
		if tk.Name == "skipme" {
			cancel() // the batch is interrupted before the last job
		}
		return f.run(ctx2, tk, o)
	}
	all := jobs("reused:pass", "ok:pass", "b:fail", "c:error", "d:weird", "skipme:pass", "never:pass")
	_, err := batch.Run(ctx, all, batch.Config{Out: dir, Runner: runOne, Name: "nightly", Hostname: "ci-7"})
	if err == nil {
		t.Fatal("Run(interrupted) error = nil, want the interruption")
	}
	_, junitPath := batch.Files(dir, batch.Shard{})
	fh, err := os.Open(junitPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	root := parseXML(t, fh)
	if root.name != "testsuites" {
		t.Fatalf("junit.xml root = <%s>, want <testsuites>", root.name)
	}
	validate(t, root, "")

	suites := childrenNamed(root, "testsuite")
	if len(suites) != 1 {
		t.Fatalf("junit.xml has %d testsuites, want 1 per batch", len(suites))
	}
	suite := suites[0]
	cases := childrenNamed(suite, "testcase")
	// The counts must agree with the testcases, or CI shows nonsense.
	tally := map[string]int{}
	for _, c := range cases {
		for _, k := range []string{"failure", "error", "skipped"} {
			tally[k] += len(childrenNamed(c, k))
		}
	}
	for _, n := range []*node{root, suite} {
		got := [4]string{n.attrs["tests"], n.attrs["failures"], n.attrs["errors"], n.attrs["skipped"]}
		want := [4]string{strconv.Itoa(len(cases)), strconv.Itoa(tally["failure"]), strconv.Itoa(tally["error"]), strconv.Itoa(tally["skipped"])}
		if got != want {
			t.Errorf("<%s> tests, failures, errors, skipped = %v, want %v from its testcases", n.name, got, want)
		}
	}
	if suite.attrs["hostname"] != "ci-7" || suite.attrs["name"] != "nightly" {
		t.Errorf("testsuite hostname, name = %q, %q, want ci-7, nightly", suite.attrs["hostname"], suite.attrs["name"])
	}

	type tc struct{ Name, Class, Outcome, Type, Message string }
	var got []tc
	for _, c := range cases {
		row := tc{Name: c.attrs["name"], Class: c.attrs["classname"], Outcome: "pass"}
		for _, k := range []string{"failure", "error", "skipped"} {
			if p := childrenNamed(c, k); len(p) == 1 {
				row.Outcome, row.Type, row.Message = k, p[0].attrs["type"], p[0].attrs["message"]
			}
		}
		got = append(got, row)
	}
	want := []tc{
		{"reused", "nightly", "pass", "", ""},
		{"ok", "nightly", "pass", "", ""},
		{"b", "nightly", "failure", "max_steps", "step cap of 3 reached"},
		{"c", "nightly", "error", "error", "launch chromium: no such file"},
		{"d", "nightly", "failure", "refusal", "refused: <b>&amp;</b> \"quoted\" 'single' second line  [31m é中"},
		{"skipme", "nightly", "skipped", "", "interrupted: context canceled"},
		{"never", "nightly", "skipped", "", "not run: the batch was interrupted"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("junit testcases (-want +got):\n%s", diff)
	}

	// system-out points at the report by absolute path, so a CI system
	// can link it.
	out := childrenNamed(cases[1], "system-out")
	wantReport := fmt.Sprintf("report: %s\n", filepath.Join(dir, "ok", "report.html"))
	if len(out) != 1 || !strings.Contains(out[0].text, wantReport) {
		t.Errorf("testcase ok system-out = %v, want one containing %q", out, wantReport)
	}
	if out := childrenNamed(cases[0], "system-out"); len(out) != 1 || !strings.Contains(out[0].text, "reused: finished by an earlier run") {
		t.Errorf("reused testcase system-out = %v, want a note that it was reused", out)
	}
}
