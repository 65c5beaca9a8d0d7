package qa

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/replay"
	"github.com/spotter-harness/spotter/screen"
)

// CheckResult is how one check went.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"` // what was found, in words
	// Region checks: the captured region, and a side-by-side diff when it
	// did not match; paths relative to the test's output directory.
	Actual string `json:"actual,omitempty"`
	Diff   string `json:"diff,omitempty"`
}

// An Evaluator runs a JavaScript expression in a display's page and returns
// its value as JSON; the DOM checks need one. A browser display
// (*cdp.Display) is one; a desktop has none.
type Evaluator interface {
	Eval(ctx context.Context, expr string) (json.RawMessage, error)
}

// checker runs the checks of one test on the display at the end of its run.
type checker struct {
	test   Test
	disp   harness.Display
	eval   Evaluator // nil: no DOM
	final  string    // the model's last words
	out    string    // the test's output directory
	update bool      // write region baselines instead of comparing
}

func (c *checker) run(ctx context.Context) []CheckResult {
	res := make([]CheckResult, len(c.test.Checks))
	for i, ch := range c.test.Checks {
		r := CheckResult{Name: ch.Describe()}
		var err error
		switch {
		case ch.URL != "" || ch.URLMatch != "":
			err = c.url(ctx, ch, &r)
		case ch.Text != "":
			err = c.dom(ctx, &r, textExpr(ch.Text), "no visible text contains %q", ch.Text)
		case ch.Element != "":
			err = c.dom(ctx, &r, elementExpr(ch.Element), "no element matches %s", ch.Element)
		case ch.Region != nil:
			err = c.region(ctx, *ch.Region, &r)
		case ch.Verdict != "":
			if regexp.MustCompile(ch.Verdict).MatchString(c.final) {
				r.Detail = "the model's last words match"
			} else {
				err = fmt.Errorf("the model's last words %q do not match /%s/", clip(c.final, 200), ch.Verdict)
			}
		}
		r.OK = err == nil
		if err != nil {
			r.Detail = err.Error()
		}
		res[i] = r
	}
	return res
}

func (c *checker) url(ctx context.Context, ch Check, r *CheckResult) error {
	shot, err := c.disp.Capture(ctx, c.small())
	if err != nil {
		return fmt.Errorf("read the URL: %w", err)
	}
	u := shot.Frame.URL
	r.Detail = "url " + u
	if ch.URL != "" && !globMatch(ch.URL, u) {
		return fmt.Errorf("url %s does not match %s", u, ch.URL)
	}
	if ch.URLMatch != "" && !regexp.MustCompile(ch.URLMatch).MatchString(u) {
		return fmt.Errorf("url %s does not match /%s/", u, ch.URLMatch)
	}
	return nil
}

// small asks for a small capture, for reading the URL: a tenth of the
// viewport (a desktop's own size when the test has none).
func (c *checker) small() screen.CaptureOptions {
	d := c.test.Task.Display
	if c.test.VNC != nil {
		return screen.CaptureOptions{}
	}
	return screen.CaptureOptions{Size: screen.Size{W: max(d.Width/10, 1), H: max(d.Height/10, 1)}}
}

// dom evaluates expr, which yields true, false or an error string.
func (c *checker) dom(ctx context.Context, r *CheckResult, expr, failFormat string, arg any) error {
	if c.eval == nil {
		return errors.New("this display has no DOM to check")
	}
	v, err := c.eval.Eval(ctx, expr)
	if err != nil {
		return err
	}
	var ok bool
	if err := json.Unmarshal(v, &ok); err != nil {
		var msg string
		if json.Unmarshal(v, &msg) == nil {
			return errors.New(msg)
		}
		return fmt.Errorf("unexpected answer %s", v)
	}
	if !ok {
		return fmt.Errorf(failFormat, arg)
	}
	r.Detail = "found"
	return nil
}

// textExpr is true when the page's visible text (innerText, which leaves
// out hidden elements) contains s, in the page or a same-origin iframe.
func textExpr(s string) string {
	q, _ := json.Marshal(s)
	return `(() => { const want = ` + string(q) + `;
  const norm = t => (t || "").replace(/\s+/g, " ");
  const seen = doc => { try { if (norm(doc.body && doc.body.innerText).includes(norm(want))) return true;
    for (const f of doc.querySelectorAll("iframe")) { if (f.contentDocument && seen(f.contentDocument)) return true; } } catch (e) {}
    return false; };
  return seen(document); })()`
}

// elementExpr is true when sel matches an element; a bad selector is an
// error string.
func elementExpr(sel string) string {
	q, _ := json.Marshal(sel)
	return `(() => { try { return document.querySelector(` + string(q) + `) !== null; } catch (e) { return "bad selector: " + e.message; } })()`
}

func (c *checker) region(ctx context.Context, rg Region, r *CheckResult) error {
	rect := actions.Rect{Min: actions.Pt(rg.X, rg.Y), Max: actions.Pt(rg.X+rg.W, rg.Y+rg.H)}
	shot, err := c.disp.Capture(ctx, screen.CaptureOptions{Region: rect, Size: screen.Size{W: int(rg.W), H: int(rg.H)}, Format: screen.PNG})
	if err != nil {
		return fmt.Errorf("capture region %s: %w", rg.Name, err)
	}
	dir := filepath.Join(c.out, "checks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.Actual = filepath.ToSlash(filepath.Join("checks", rg.Name+".png"))
	if err := os.WriteFile(filepath.Join(c.out, r.Actual), shot.Data, 0o644); err != nil {
		return err
	}
	base := filepath.Join(c.test.Baselines, c.test.Task.Name, rg.Name+".png")
	if c.update {
		if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(base, shot.Data, 0o644); err != nil {
			return err
		}
		r.Detail = "baseline written to " + base
		return nil
	}
	wb, err := os.ReadFile(base)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no baseline %s (run with --update-baselines to make one)", base)
	} else if err != nil {
		return err
	}
	want, err := replay.Decode(wb)
	if err != nil {
		return fmt.Errorf("baseline %s: %w", base, err)
	}
	got, err := replay.Decode(shot.Data)
	if err != nil {
		return err
	}
	tol := cmp.Or(rg.Tolerance, 0.01)
	d := replay.Compare(want, got)
	if d.Score <= tol {
		r.Detail = fmt.Sprintf("%.2f%% of the region differs (tolerance %.2f%%)", 100*d.Score, 100*tol)
		return nil
	}
	if b, err := replay.EncodePNG(captioned(replay.SideBySide(want, got, d), regionCaptions)); err == nil {
		r.Diff = filepath.ToSlash(filepath.Join("checks", rg.Name+"-diff.png"))
		if err := os.WriteFile(filepath.Join(c.out, r.Diff), b, 0o644); err != nil {
			r.Diff = ""
		}
	}
	return fmt.Errorf("%.2f%% of region %s differs from its baseline (tolerance %.2f%%)", 100*d.Score, rg.Name, 100*tol)
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
