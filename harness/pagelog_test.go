package harness_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// loggingPage is a display whose page logs what it is typed and sends it
// in the URLs of its requests, as a careless login form does.
type loggingPage struct {
	screentest.Fake
	typed string
}

func (p *loggingPage) Perform(ctx context.Context, m screen.Mapped) error {
	if m.Kind == actions.Type {
		p.typed = m.Text
	}
	return p.Fake.Perform(ctx, m)
}

func (p *loggingPage) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	shot, err := p.Fake.Capture(ctx, o)
	if err != nil || p.typed == "" {
		return shot, err
	}
	now := time.Now()
	shot.Log = screen.PageLog{
		Console: []screen.ConsoleMessage{{Time: now, Level: "error", Source: "console", Text: "login failed for " + p.typed}},
		Requests: []screen.Request{
			{Time: now, Method: "GET", URL: "https://shop.example/login?user=ada&pw=" + url.QueryEscape(p.typed) + "#next", Status: 401},
			{Time: now, Method: "GET", URL: "https://shop.example/u/" + url.PathEscape(p.typed) + "/avatar.png", Status: 404},
		},
	}
	return shot, nil
}

// What a page logs and requests reaches the record with every secret
// masked, in its text and in its URLs however they encode it, and never
// reaches the model.
func TestPageLogIsRecordedRedacted(t *testing.T) {
	const pw = "p@ss word/+&=é"
	m := &turnsModel{turns: []harness.Turn{
		{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "c1", Name: "computer",
			Actions: []actions.Action{click(50, 50), typing(pw)}}}},
	}}
	d := &loggingPage{}
	var results []trace.Event
	cfg := harness.Config{Model: m, Display: d, Policy: permissive, Inspector: page{focused: passwordField},
		OnEvent: func(e trace.Event) {
			if e.Type == trace.TypeResult {
				results = append(results, e)
			}
		}}
	if _, err := harness.Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if d.typed != pw {
		t.Fatalf("the page was typed %q, want the password", d.typed)
	}
	if len(results) != 1 || len(results[0].Page.Console) != 1 || len(results[0].Page.Requests) != 2 {
		t.Fatalf("result events %+v, want one with the page's message and two requests", results)
	}
	b, _ := json.Marshal(results[0])
	for _, leak := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the recorded result holds the password as %q: %s", leak, b)
		}
	}
	got := results[0].Page
	mask, ok := strings.CutPrefix(got.Console[0].Text, "login failed for ")
	if !ok || !strings.HasPrefix(mask, "[") {
		t.Fatalf("console message = %q, want the password masked", got.Console[0].Text)
	}
	if want := "https://shop.example/login?user=ada&pw=" + mask + "#next"; got.Requests[0].URL != want {
		t.Errorf("request URL = %q, want %q", got.Requests[0].URL, want)
	}
	if want := "https://shop.example/u/" + mask + "/avatar.png"; got.Requests[1].URL != want {
		t.Errorf("request URL = %q, want %q", got.Requests[1].URL, want)
	}
	for _, in := range m.got {
		for _, r := range in.Results {
			if r.Shot != nil && !r.Shot.Log.Empty() {
				t.Errorf("the model was sent the page's log: %+v", r.Shot.Log)
			}
		}
	}
}
