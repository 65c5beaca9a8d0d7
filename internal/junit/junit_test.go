package junit

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteParses(t *testing.T) {
	nasty := "refused: <b>&amp;</b> \"q\" 's' ]]> \x1b[31m \x00 bad\xffutf8 é中\nsecond line"
	doc := Suites{Name: "nightly", Time: Seconds(90 * time.Second), Suites: []Suite{{
		Name: "nightly", Time: Seconds(1500 * time.Millisecond), Timestamp: Timestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))),
		Properties: []Property{{"parallel", "2"}, {"odd", "a<b"}},
		Cases: []Case{
			{Name: "ok", Classname: "nightly", Time: Seconds(time.Second), SystemOut: "report: /tmp/ok/report.html\n"},
			{Name: "bad", Classname: "nightly", File: "bad.yaml", Time: Seconds(0), Failure: &Problem{Message: nasty, Type: "max_steps", Text: nasty}},
			{Name: "err", Classname: "nightly", Time: Seconds(0), Error: &Problem{Message: strings.Repeat("x", 2000), Text: "long"}},
			{Name: "skip", Classname: "nightly", Time: Seconds(0), Skipped: &Problem{Message: "interrupted"}},
			{Name: "both", Classname: "nightly", Time: Seconds(0), Failure: &Problem{Message: "f"}, Skipped: &Problem{Message: "s"}},
		},
	}}}
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	// Every token must decode: the document is well-formed XML.
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Write produced malformed XML: %v\n%s", err, b.Bytes())
		}
	}
	var got Suites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("xml.Unmarshal(Write output) = %v\n%s", err, b.Bytes())
	}
	if got.Tests != 5 || got.Failures != 2 || got.Errors != 1 || got.Skipped != 1 || got.Time != "90.000" || got.Name != "nightly" {
		t.Errorf("testsuites = tests %d failures %d errors %d skipped %d time %s name %q, want 5 2 1 1 90.000 nightly",
			got.Tests, got.Failures, got.Errors, got.Skipped, got.Time, got.Name)
	}
	s := got.Suites[0]
	if s.Tests != 5 || s.Failures != 2 || s.Errors != 1 || s.Skipped != 1 || s.ID != 0 || s.Hostname != "localhost" || s.Package != "nightly" ||
		s.Time != "1.500" || s.Timestamp != "2026-01-02T02:04:05" {
		t.Errorf("testsuite = %+v, want counts 5/2/1/1, id 0, hostname localhost, package nightly, time 1.500, UTC timestamp", s)
	}
	if diff := cmp.Diff([]Property{{"parallel", "2"}, {"odd", "a<b"}}, s.Properties); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	c := s.Cases
	if c[0].Failure != nil || c[0].Error != nil || c[0].Skipped != nil || c[0].SystemOut != "report: /tmp/ok/report.html\n" || c[0].Time != "1.000" {
		t.Errorf("passing case = %+v, want no problem, its system-out and time 1.000", c[0])
	}
	// Runes XML cannot carry become U+FFFD; newlines and control
	// characters in a message become spaces.
	wantText := "refused: <b>&amp;</b> \"q\" 's' ]]> \uFFFD[31m \uFFFD bad\uFFFDutf8 é中\nsecond line"
	wantMsg := "refused: <b>&amp;</b> \"q\" 's' ]]>  [31m   bad\uFFFDutf8 é中 second line"
	if f := c[1].Failure; f == nil || f.Type != "max_steps" || f.Text != wantText || f.Message != wantMsg || c[1].File != "bad.yaml" {
		t.Errorf("failing case = %+v %+v,\nwant type max_steps, message %q, text %q, file bad.yaml", c[1], f, wantMsg, wantText)
	}
	if e := c[2].Error; e == nil || e.Type != "error" || len([]rune(e.Message)) != MaxMessage || !strings.HasSuffix(e.Message, "…") || e.Text != "long" {
		t.Errorf("error case = %+v, want type error and a message cut to %d runes", e, MaxMessage)
	}
	if sk := c[3].Skipped; sk == nil || sk.Message != "interrupted" || sk.Type != "" {
		t.Errorf("skipped case = %+v, want message interrupted and no type", sk)
	}
	if c[4].Failure == nil || c[4].Skipped != nil || c[4].Failure.Type != "failure" {
		t.Errorf("case with a failure and a skip = %+v, want the failure alone", c[4])
	}
	if !bytes.HasPrefix(b.Bytes(), []byte(xml.Header)) {
		t.Errorf("Write output starts %q, want the XML header", b.Bytes()[:min(40, b.Len())])
	}
	// Write must not change the caller's document.
	if doc.Suites[0].Cases[1].Failure.Message != nasty || doc.Tests != 0 {
		t.Errorf("Write modified its argument")
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0.000"},
		{1500 * time.Microsecond, "0.002"},
		{61 * time.Second, "61.000"},
		{3 * time.Hour, "10800.000"},
	}
	for _, tt := range tests {
		if got := Seconds(tt.in); got != tt.want {
			t.Errorf("Seconds(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMessage(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\nb\tc\r", "a b c "},
		{"del\x7f", "del "},
		{strings.Repeat("é", MaxMessage), strings.Repeat("é", MaxMessage)},
		{strings.Repeat("é", MaxMessage+1), strings.Repeat("é", MaxMessage-1) + "…"},
	}
	for _, tt := range tests {
		if got := Message(tt.in); got != tt.want {
			t.Errorf("Message(%.20q) = %.20q, want %.20q", tt.in, got, tt.want)
		}
	}
}
