package web_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// goTypes matches what a Go JSON error shows of the server's types.
var goTypes = regexp.MustCompile(`Go (struct|value)|\b(session|screen|actions|store|web)\.[A-Z]|\b(int|int64|float64|bool|\[\]\w+)\b|json: `)

// A body of the wrong shape gets a 400 that says what is wrong in the
// API's words: the field and the JSON type it wants, never Go's types.
func TestBadBodiesAreAnsweredInTheAPIsWords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	tests := []struct {
		method, path, body, want string
	}{
		{"POST", "/executor/sessions", `{"provider":"anthropic","display":{"width":"wide"}}`, "display.width"},
		{"POST", "/executor/sessions", `{"provider":"anthropic","display":{"image":"1024x768"}}`, "display.image"},
		{"PUT", "/session", `{"messages":"hello"}`, "messages"},
		{"PUT", "/session", `{"messages":[{"role":"user","content":"x"}],"max_steps":"ten"}`, "max_steps"},
		{"PUT", "/session", `{"nope":1}`, `unknown field`},
		{"PUT", "/session", `{"messages":[`, "ends too early"},
	}
	for _, tt := range tests {
		req, err := http.NewRequestWithContext(t.Context(), tt.method, e.base+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s %s %s = %d %s, want 400 naming %s", tt.method, tt.path, tt.body, r.StatusCode, b, tt.want)
		}
		if m := goTypes.FindString(string(b)); m != "" {
			t.Errorf("%s %s %s: the answer shows Go's types (%q): %s", tt.method, tt.path, tt.body, m, b)
		}
	}
}
