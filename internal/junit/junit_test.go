package junit

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
	// Runes XML cannot carry become U+FFFD; newlines and control
	// characters in a message become spaces; a message is cut to
	// MaxMessage runes.
	wantText := "refused: <b>&amp;</b> \"q\" 's' ]]> \uFFFD[31m \uFFFD bad\uFFFDutf8 é中\nsecond line"
	wantMsg := "refused: <b>&amp;</b> \"q\" 's' ]]>  [31m   bad\uFFFDutf8 é中 second line"
	want := Suites{Name: "nightly", Tests: 5, Failures: 2, Errors: 1, Skipped: 1, Time: "90.000", Suites: []Suite{{
		Name: "nightly", Tests: 5, Failures: 2, Errors: 1, Skipped: 1, Time: "1.500", Timestamp: "2026-01-02T02:04:05",
		Hostname: "localhost", ID: 0, Package: "nightly",
		Properties: []Property{{"parallel", "2"}, {"odd", "a<b"}},
		Cases: []Case{
			{Name: "ok", Classname: "nightly", Time: "1.000", SystemOut: "report: /tmp/ok/report.html\n"},
			{Name: "bad", Classname: "nightly", File: "bad.yaml", Time: "0.000", Failure: &Problem{Message: wantMsg, Type: "max_steps", Text: wantText}},
			{Name: "err", Classname: "nightly", Time: "0.000", Error: &Problem{Message: strings.Repeat("x", MaxMessage-1) + "…", Type: "error", Text: "long"}},
			{Name: "skip", Classname: "nightly", Time: "0.000", Skipped: &Problem{Message: "interrupted"}},
			{Name: "both", Classname: "nightly", Time: "0.000", Failure: &Problem{Message: "f", Type: "failure"}},
		},
	}}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Suites{}, "XMLName")); diff != "" {
		t.Errorf("Write then xml.Unmarshal (-want +got):\n%s", diff)
	}
	if !bytes.HasPrefix(b.Bytes(), []byte(xml.Header)) {
		t.Errorf("Write output starts %q, want the XML header", b.Bytes()[:min(40, b.Len())])
	}
	// Write must not change the caller's document.
	if doc.Suites[0].Cases[1].Failure.Message != nasty || doc.Tests != 0 || doc.Suites[0].Cases[4].Skipped == nil {
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
