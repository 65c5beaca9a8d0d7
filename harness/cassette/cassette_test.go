package cassette

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const demoCassette = "../../examples/cassettes/demo-anthropic.json"

var update = flag.Bool("update", false, "rewrite examples/cassettes/demo-anthropic.json in the form Encode writes")

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, "empty file"},
		{"truncated", `{"version":1,"interactions":[`, "truncated"},
		{"syntax", "{\n  \"version\": 1,\n  \"interactions\": [,]\n}", "line 3, column 20"},
		{"wrong type", "{\n\"version\": \"1\"}", "line 2, column 15: version is JSON string, want int"},
		{"unknown field", `{"version":1,"interactions":[{"request":{"methd":"POST"}}]}`, `unknown field "methd"`},
		{"trailing data", `{"version":1,"interactions":[]} {}`, "line 1, column 33: data after the cassette"},
		{"version", `{"version":2,"interactions":[]}`, "version 2, want 1"},
		{"no method", `{"version":1,"interactions":[{"request":{"url":"/x"},"response":{"status":200}}]}`, `interaction 0: request method ""`},
		{"relative url", `{"version":1,"interactions":[{"request":{"method":"GET","url":"x"},"response":{"status":200}}]}`, `want an absolute URL or a path starting with /`},
		{"bad url", `{"version":1,"interactions":[{"request":{"method":"GET","url":"http://[::1"},"response":{"status":200}}]}`, `interaction 0: request url`},
		{"bad query", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/x?a=%zz"},"response":{"status":200}}]}`, `query`},
		{"status", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":99}}]}`, "response status 99"},
		{"two bodies", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":200,"body":{},"body_text":"x"}}]}`, "response: more than one of body"},
		{"bad header", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/x","header":{"a b":"c"}},"response":{"status":200}}]}`, `header "a b"`},
		{"header newline", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":200,"header":{"a":"b\r\nc: d"}}}]}`, `header "a"`},
		{"bad base64", `{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":200,"body_base64":"%%"}}]}`, "illegal base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, c)
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) error = %v, want ErrFormat saying %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	notGzip := filepath.Join(dir, "x.json.gz")
	if err := os.WriteFile(notGzip, []byte(`{"version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(notGzip); !errors.Is(err, ErrFormat) {
		t.Errorf("Load(%s) error = %v, want ErrFormat", notGzip, err)
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := Load(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(%s) error = %v, want os.ErrNotExist", missing, err)
	}
}

func TestWriteLoad(t *testing.T) {
	c := twoTurns()
	c.Comment = "a <comment> & more"
	c.Interactions[0].Response.Payload = Payload{Text: "line 1\nline 2"}
	c.Interactions[1].Response.Payload = Payload{Base64: []byte{0, 0xff}}
	dir := t.TempDir()
	for _, name := range []string{"c.json", "c.json.gz"} {
		path := filepath.Join(dir, name)
		if err := c.Write(path); err != nil {
			t.Fatalf("Write(%s): %v", path, err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatalf("Load(%s): %v", path, err)
		}
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("Load(Write(c)) (-want +got):\n%s", diff)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(matches) > 0 {
		t.Errorf("Write left temporary files: %v", matches)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "c.json"))
	if !bytes.Contains(raw, []byte("a <comment> & more")) {
		t.Errorf("Write escaped HTML characters:\n%s", raw)
	}
}

// TestDemoCassetteIsCanonical checks that the hand-written demo cassette
// is in the form Encode writes, so that re-recording it gives a clean diff.
// After a hand edit, go test -run TestDemoCassetteIsCanonical -update
// rewrites it so.
func TestDemoCassetteIsCanonical(t *testing.T) {
	raw, err := os.ReadFile(demoCassette)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := c.Write(demoCassette); err != nil {
			t.Fatal(err)
		}
	} else if !bytes.Equal(buf.Bytes(), raw) {
		t.Errorf("%s is not as Encode writes it; run go test -run TestDemoCassetteIsCanonical -update", demoCassette)
	}
	for i, it := range c.Interactions {
		if it.Request.Match == nil || it.Request.Match.Model == "" || it.Request.Match.Tool == "" || it.Request.Match.Display == "" {
			t.Errorf("interaction %d match = %+v, want model, tool and display", i, it.Request.Match)
		}
		if i > 0 && len(it.Request.Match.Answers) == 0 {
			t.Errorf("interaction %d answers nothing; every later request answers the calls before it", i)
		}
	}
}

func TestPayload(t *testing.T) {
	tests := []struct {
		in   []byte
		want Payload
	}{
		{nil, Payload{}},
		{[]byte(" {\"a\": 1}\n"), Payload{JSON: []byte(`{"a": 1}`)}},
		{[]byte("text\n"), Payload{Text: "text\n"}},
		{[]byte{0xff, 0xfe}, Payload{Base64: []byte{0xff, 0xfe}}},
	}
	for _, tt := range tests {
		got := newPayload(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("newPayload(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	if got := (Payload{JSON: []byte("{\n  \"a\": [1, 2]\n}")}).Bytes(); string(got) != `{"a":[1,2]}` {
		t.Errorf("Bytes() of indented JSON = %s, want it compacted", got)
	}
}
