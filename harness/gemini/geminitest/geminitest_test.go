package geminitest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/screen"
)

// recorder is a geminitest.T that keeps the errors instead of failing.
// With a nil t (in examples) its Cleanup does nothing.
type recorder struct {
	t    testing.TB
	errs []string
}

func (*recorder) Helper() {}
func (r *recorder) Cleanup(f func()) {
	if r.t != nil {
		r.t.Cleanup(f)
	}
}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestServerRejects(t *testing.T) {
	tests := []struct {
		name, method, path, key, body, want string
	}{
		{"wrong path", "POST", "v1/models/m:generateContent", "k", "{}", "want POST /v1beta/models/{model}:generateContent"},
		{"wrong method", "GET", "v1beta/models/m:generateContent", "k", "", "want POST"},
		{"no key", "POST", "v1beta/models/m:generateContent", "", "{}", "no x-goog-api-key"},
		{"not json", "POST", "v1beta/models/m:generateContent", "k", "{", "not JSON"},
		{"beyond script", "POST", "v1beta/models/m:generateContent", "k", "{}", "the script has 0 replies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{t: t}
			srv := geminitest.NewServer(rec)
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.key != "" {
				req.Header.Set("x-goog-api-key", tt.key)
			}
			resp, err := srv.Transport().RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tt.want) {
				t.Errorf("%s %s = %d, test errors %q; want 400 and an error containing %q", tt.method, tt.path, resp.StatusCode, rec.errs, tt.want)
			}
		})
	}
}

func TestCallOf(t *testing.T) {
	c, err := geminitest.CallOf(gemini.FunctionsLegacy, "id-1", actions.Action{Kind: actions.Click, At: actions.Pt(3, 4), HasAt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := geminitest.Call{ID: "id-1", Name: "click_at", Args: map[string]any{"x": 3.0, "y": 4.0}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("CallOf(click) (-want +got):\n%s", diff)
	}
	if _, err := geminitest.CallOf(gemini.FunctionsLegacy, "id-2", actions.Action{Kind: actions.Zoom}); err == nil {
		t.Errorf("CallOf(zoom) error = nil, want one")
	}
}

func ExampleNewServer() {
	srv := geminitest.NewServer(&recorder{},
		geminitest.Turn{Calls: []geminitest.Call{{ID: "c1", Name: "take_screenshot"}}}.Reply(),
		geminitest.Text("All done."),
	)
	m, err := gemini.New(gemini.Config{APIKey: "key", BaseURL: srv.URL, Model: "gemini-3.5-flash", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	turn, _ := m.Next(ctx, harness.Input{Task: "Look at the page."})
	fmt.Println(turn.Stop, turn.Calls[0].ID)
	shot := &screen.Shot{Frame: screen.Frame{URL: "https://example.com/", Format: screen.PNG}, Data: []byte("png")}
	turn, _ = m.Next(ctx, harness.Input{Results: []harness.Result{{CallID: "c1", Ran: 1, Shot: shot}}})
	fmt.Println(turn.Stop, turn.Text)

	reqs := srv.Requests()
	frs, _ := reqs[1].FunctionResponses()
	fmt.Println(len(reqs), reqs[1].Model, frs[0].ID, frs[0].Name, frs[0].Response["url"], frs[0].Parts[0].InlineData.MIMEType)
	// Output:
	// tool_use c1
	// end_turn All done.
	// 2 gemini-3.5-flash c1 take_screenshot https://example.com/ image/png
}
