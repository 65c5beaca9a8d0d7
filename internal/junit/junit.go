// Package junit writes JUnit XML, the report format CI systems read
// (Jenkins, GitLab, the GitHub actions that publish test reports): the Ant
// format, with every attribute the common schemas require. spotter batch
// and spotter test both write it through [Write].
//
// The types are the document itself; [Write] fills in what follows from
// the test cases (every count, suite ids, a hostname and package when
// none is given) and keeps failure messages to one line of at most
// [MaxMessage] characters. The encoder escapes markup and replaces runes
// that XML cannot carry (control characters other than tab, newline and
// carriage return; invalid UTF-8) with U+FFFD, so any error text may go in.
package junit

import (
	"cmp"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"time"
)

// Suites is the document's root, <testsuites>. Write sets its counts from
// its suites; Time is the caller's (the whole run's wall time).
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"` // Seconds
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>. Write sets its counts from its cases, its ID
// to its index, an empty Hostname to "localhost" and an empty Package to
// its Name.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       string     `xml:"time,attr"`      // Seconds
	Timestamp  string     `xml:"timestamp,attr"` // Timestamp
	Hostname   string     `xml:"hostname,attr"`
	ID         int        `xml:"id,attr"`
	Package    string     `xml:"package,attr"`
	Properties []Property `xml:"properties>property,omitempty"`
	Cases      []Case     `xml:"testcase"`
}

// Property is one name and value of a suite's <properties>.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one <testcase>. None of Skipped, Error and Failure set means it
// passed; of several, Write keeps the first of Failure, Error, Skipped.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	File      string   `xml:"file,attr,omitempty"`
	Time      string   `xml:"time,attr"` // Seconds
	Skipped   *Problem `xml:"skipped"`
	Error     *Problem `xml:"error"`
	Failure   *Problem `xml:"failure"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Problem is why a case failed, erred or was skipped: a short Message (an
// attribute, one line) and the whole story in Text.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"` // required for failures and errors; "failure" or "error" when empty
	Text    string `xml:",chardata"`
}

// MaxMessage bounds a Problem's Message, in runes; its Text holds the
// whole story.
const MaxMessage = 1000

// Seconds formats d as JUnit's time: decimal seconds, three places.
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// Timestamp formats t as JUnit's timestamp: ISO 8601 in UTC, without a
// zone.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05")
}

// Write writes doc, with an XML header, to w after filling in what
// follows from its cases (see Suites and Suite) and keeping messages to one
// line of at most MaxMessage runes.
func Write(w io.Writer, doc Suites) error {
	doc = complete(doc)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	e := xml.NewEncoder(w)
	e.Indent("", "  ")
	if err := e.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// complete returns a copy of doc with its counts, ids, defaults and
// messages filled in.
func complete(doc Suites) Suites {
	doc.Suites = append([]Suite(nil), doc.Suites...)
	doc.Tests, doc.Failures, doc.Errors, doc.Skipped = 0, 0, 0, 0
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.ID = i
		s.Hostname = cmp.Or(s.Hostname, "localhost")
		s.Package = cmp.Or(s.Package, s.Name)
		s.Cases = append([]Case(nil), s.Cases...)
		s.Tests, s.Failures, s.Errors, s.Skipped = len(s.Cases), 0, 0, 0
		for j := range s.Cases {
			c := &s.Cases[j]
			switch {
			case c.Failure != nil:
				s.Failures++
				c.Failure, c.Error, c.Skipped = problem(c.Failure, "failure"), nil, nil
			case c.Error != nil:
				s.Errors++
				c.Error, c.Skipped = problem(c.Error, "error"), nil
			case c.Skipped != nil:
				s.Skipped++
				c.Skipped = problem(c.Skipped, "")
			}
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	return doc
}

// problem returns a copy of p with its message made one short line and an
// empty type set to typ.
func problem(p *Problem, typ string) *Problem {
	q := *p
	q.Message = Message(q.Message)
	q.Type = cmp.Or(q.Type, typ)
	return &q
}

// Message makes s fit a message attribute: control characters (newlines
// included) become spaces, and it is cut to MaxMessage runes, the last one
// an ellipsis.
func Message(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > MaxMessage {
		return string(r[:MaxMessage-1]) + "…"
	}
	return s
}
