package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func addCassetteSeeds(f *testing.F) {
	if b, err := os.ReadFile(demoCassette); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"version":1,"interactions":[]}`))
	f.Add([]byte(`{"version":1,"comment":"c","interactions":[{"request":{"method":"POST","url":"https://h/v1/messages?beta=true",` +
		`"header":{"content-type":"application/json"},"match":{"model":"m","tool":"computer_20250124","display":"1x1","answers":["a"]},` +
		`"body":{"model":"m"}},"response":{"status":200,"header":{"request-id":"r"},"body":{"id":"msg"}}}]}`))
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"/x","body_text":"t"},"response":{"status":404,"body_base64":"AAE="}}]}`))
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":200,"body":null}}]}`))
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":200,"body":"<\u2028>"}}]}`))
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"/x"},"response":{"status":200}}]} `))
	f.Add([]byte(`{"version":1,"interactions":[`))
	f.Add([]byte(`{"version":1,"interactions":[{"request":{"method":"GET","url":"/%zz"},"response":{"status":200}}]}`))
	f.Add([]byte{0xff, '{'})
}

// FuzzParse checks that Parse never panics, that what it accepts encodes
// to a fixed point, and that a Player for it answers without panicking.
func FuzzParse(f *testing.F) {
	addCassetteSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		var once, twice bytes.Buffer
		if err := c.Encode(&once); err != nil {
			t.Fatalf("Encode of a parsed cassette: %v", err)
		}
		c2, err := Parse(once.Bytes())
		if err != nil {
			t.Fatalf("Parse(Encode(Parse(%q))): %v\n%s", b, err, once.Bytes())
		}
		if err := c2.Encode(&twice); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("Encode is not a fixed point:\n%s\n---\n%s", once.Bytes(), twice.Bytes())
		}
		p := NewPlayer(c)
		for _, it := range c.Interactions[:min(len(c.Interactions), 3)] {
			req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"model":"m"}`))
			if it.Request.URL != "" && it.Request.URL[0] == '/' {
				req = httptest.NewRequest(it.Request.Method, "http://h"+it.Request.URL, bytes.NewReader(it.Request.Bytes()))
			}
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, req)
			if rec.Code < 100 || rec.Code > 599 {
				t.Fatalf("ServeHTTP status %d", rec.Code)
			}
		}
		_ = p.Err()
	})
}

// FuzzMatchBody checks that MatchBody never panics and is deterministic.
func FuzzMatchBody(f *testing.F) {
	f.Add([]byte(`{"model":"m","tools":[{"type":"computer_20250124","display_width_px":1,"display_height_px":2}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`))
	f.Add([]byte(`{"input":[{"type":"computer_call_output","call_id":"c"}],"tools":[{"type":"computer"}]}`))
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"n"}}]}],"tools":[{"computerUse":null}]}`))
	f.Add([]byte(`{"messages":"x","input":{},"contents":7}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m1, m2 := MatchBody(b), MatchBody(b)
		if m1.Model != m2.Model || m1.Tool != m2.Tool || m1.Display != m2.Display || strings.Join(m1.Answers, "\x00") != strings.Join(m2.Answers, "\x00") {
			t.Fatalf("MatchBody(%q) not deterministic: %+v then %+v", b, m1, m2)
		}
	})
}

// FuzzStripImages checks that stripping images keeps JSON valid, changes
// nothing in a body that is not JSON, and is idempotent. It strips strings
// from 16 characters on, so that small inputs (which the fuzzer mutates
// and minimizes quickly) hold images: a 1x1 PNG.
func FuzzStripImages(f *testing.F) {
	const minChars = 16
	png := base64.StdEncoding.EncodeToString(noisePNG(f, 1, 1))
	f.Add([]byte(`{"data":"` + png + `"}`))
	f.Add([]byte(`["data:image/png;base64,` + png + `", 1, {"k": null}]`))
	f.Add([]byte(`"` + png + `"`))
	f.Add([]byte(`{"a":"` + strings.Repeat("x", minChars) + `", "b": "R0lGODlhAQABAAAAACw="}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := stripImages(b, minChars)
		if !json.Valid(b) {
			if !bytes.Equal(got, b) {
				t.Fatalf("stripImages changed a body that is not JSON: %q -> %q", b, got)
			}
			return
		}
		if !json.Valid(got) {
			t.Fatalf("stripImages(%q) = %q, not JSON", b, got)
		}
		if again := stripImages(got, minChars); !bytes.Equal(again, got) {
			t.Fatalf("stripImages is not idempotent: %q -> %q", got, again)
		}
	})
}

// Keep the fuzz seeds' helper usable from f.
var _ testing.TB = (*testing.F)(nil)

var _ http.RoundTripper = (*Player)(nil)
var _ http.Handler = (*Player)(nil)
var _ http.RoundTripper = (*Recorder)(nil)
