package qa

import (
	"bytes"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/image/draw"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/junit"
	"github.com/spotter-harness/spotter/internal/replay"
)

// TimelineShot is one screenshot of a run, with what was done on it.
type TimelineShot struct {
	Step    int    `json:"step"`
	Src     string `json:"src"` // the image, relative to the suite's output directory
	FrameID string `json:"frame_id"`
	W       int    `json:"w"`
	H       int    `json:"h"`
	// Did lists the actions performed on this screenshot, and Marks the
	// image pixels they aimed at.
	Did   []string        `json:"did,omitempty"`
	Marks []actions.Point `json:"marks,omitempty"`
	Error string          `json:"error,omitempty"`
}

// MarkStyles places the marks over the screenshot, for the report.
func (s TimelineShot) MarkStyles() []template.CSS {
	if s.W <= 0 || s.H <= 0 {
		return nil
	}
	out := make([]template.CSS, len(s.Marks))
	for i, m := range s.Marks {
		out[i] = template.CSS(fmt.Sprintf("left:%.2f%%;top:%.2f%%", 100*(m.X+0.5)/float64(s.W), 100*(m.Y+0.5)/float64(s.H)))
	}
	return out
}

// timeline lists the run's full screenshots in order, with the actions
// mapped from each. dir is the test's directory relative to the suite.
func timeline(evs []trace.Event, dir string) []TimelineShot {
	var shots []TimelineShot
	byFrame := map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case trace.TypeRunStart, trace.TypeResult:
			if e.Shot == "" || e.Frame.Zoomed() {
				continue
			}
			byFrame[e.Frame.ID] = len(shots)
			shots = append(shots, TimelineShot{Step: e.Step, Src: rel(dir, e.Shot), FrameID: e.Frame.ID,
				W: e.Frame.Sent.W, H: e.Frame.Sent.H, Error: e.Error})
		case trace.TypeAction:
			i, ok := byFrame[e.FrameID]
			if !ok {
				continue
			}
			s := &shots[i]
			what := e.Action.Kind.String()
			if e.Error != "" {
				what += " (failed)"
			}
			s.Did = append(s.Did, what)
			switch {
			case e.Mapped.HasAt:
				s.Marks = append(s.Marks, e.Frame.FromCSS(e.Mapped.At))
			case len(e.Mapped.Path) > 0:
				for _, p := range e.Mapped.Path {
					s.Marks = append(s.Marks, e.Frame.FromCSS(p))
				}
			}
		}
	}
	return shots
}

// gifWidth is the widest frame of the animated replay.
const gifWidth = 640

// writeGIF renders the run's screenshots as an animated GIF, a second
// each (the last for three), with the points acted on ringed in red.
func writeGIF(path, dir string, evs []trace.Event) error {
	shots := timeline(evs, ".")
	if len(shots) == 0 {
		return fmt.Errorf("no screenshots")
	}
	anim := &gif.GIF{}
	for i, s := range shots {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(s.Src, "./"))))
		if err != nil {
			return err
		}
		img, err := replay.Decode(b)
		if err != nil {
			return err
		}
		sb := img.Bounds()
		w := min(gifWidth, sb.Dx())
		h := max(1, sb.Dy()*w/max(sb.Dx(), 1))
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(rgba, rgba.Bounds(), img, sb, draw.Src, nil)
		scale := float64(w) / float64(sb.Dx())
		for _, m := range s.Marks {
			ring(rgba, int(m.X*scale), int(m.Y*scale), 9, color.RGBA{0xe0, 0x10, 0x10, 0xff})
		}
		pal := image.NewPaletted(rgba.Bounds(), palette216())
		draw.FloydSteinberg.Draw(pal, pal.Bounds(), rgba, image.Point{})
		delay := 100
		if i == len(shots)-1 {
			delay = 300
		}
		anim.Image = append(anim.Image, pal)
		anim.Delay = append(anim.Delay, delay)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// palette216 is the web-safe colours plus greys: good enough for UI screenshots.
func palette216() color.Palette {
	var p color.Palette
	for r := 0; r < 6; r++ {
		for g := 0; g < 6; g++ {
			for b := 0; b < 6; b++ {
				p = append(p, color.RGBA{uint8(r * 51), uint8(g * 51), uint8(b * 51), 0xff})
			}
		}
	}
	for i := 1; i < 40; i++ {
		v := uint8(i * 255 / 40)
		p = append(p, color.RGBA{v, v, v, 0xff})
	}
	return p
}

// ring draws a circle of radius r, three pixels thick, around (cx, cy).
func ring(img *image.RGBA, cx, cy, r int, c color.RGBA) {
	for y := cy - r - 2; y <= cy+r+2; y++ {
		for x := cx - r - 2; x <= cx+r+2; x++ {
			d := (x-cx)*(x-cx) + (y-cy)*(y-cy)
			if d >= (r-1)*(r-1) && d <= (r+2)*(r+2) && image.Pt(x, y).In(img.Bounds()) {
				img.SetRGBA(x, y, c)
			}
		}
	}
}

// writeJUnit writes the suite to path as JUnit XML: one testsuite, a
// testcase per test with its checks in system-out and, when it failed, the
// first line of why as the failure's message.
func writeJUnit(path string, s Suite) error {
	suite := junit.Suite{Name: "spotter", Time: junit.Seconds(s.Elapsed), Timestamp: junit.Timestamp(time.Now())}
	for _, t := range s.Tests {
		c := junit.Case{Name: t.Name, Classname: "spotter.qa", File: t.File, Time: junit.Seconds(t.Elapsed)}
		var out strings.Builder
		for _, ch := range t.Checks {
			status := "ok"
			if !ch.OK {
				status = "FAIL"
			}
			fmt.Fprintf(&out, "check %s %s: %s\n", status, ch.Name, ch.Detail)
		}
		if t.Report != "" {
			fmt.Fprintf(&out, "trace report: %s\n", t.Report)
		}
		c.SystemOut = out.String()
		if !t.OK {
			first, _, _ := strings.Cut(t.Failure, "\n")
			c.Failure = &junit.Problem{Message: first, Type: "failure", Text: t.Failure}
		}
		suite.Cases = append(suite.Cases, c)
	}
	var b bytes.Buffer
	if err := junit.Write(&b, junit.Suites{Time: suite.Time, Suites: []junit.Suite{suite}}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":   func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() },
	"score": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
}).Parse(reportHTML))

// writeReport renders the suite as one HTML page. Images are files next to
// it, referred to by relative paths, so the output directory is the unit
// to keep or attach.
func writeReport(path string, s Suite) error {
	var b bytes.Buffer
	if err := reportTmpl.Execute(&b, s); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

const reportHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Spotter test report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2433; background: #f6f7fb; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin: 0 0 8px; }
.sum { font-size: 16px; margin-bottom: 16px; }
.pass { color: #1a7f37; } .fail { color: #c62828; }
section.test { background: #fff; border: 1px solid #d5dbe8; border-radius: 8px; padding: 16px; margin-bottom: 20px; }
pre.failure { background: #fdecea; padding: 8px; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 8px 0; } td, th { border-bottom: 1px solid #eef1f7; padding: 4px 8px; text-align: left; vertical-align: top; }
.timeline { display: flex; gap: 10px; overflow-x: auto; padding: 8px 0; }
.shot { flex: none; width: 260px; }
.shot .pic { position: relative; }
.shot img { width: 260px; border: 1px solid #ccd; display: block; }
.mark { position: absolute; width: 12px; height: 12px; margin: -8px 0 0 -8px; border: 2px solid #e01010; border-radius: 50%; }
.cap { font-size: 12px; color: #5b6680; }
img.diff, img.gif { max-width: 100%; border: 1px solid #ccd; }
figure.diff { margin: 6px 0; display: inline-block; max-width: 100%; }
figure.diff .caps { display: grid; grid-template-columns: repeat(3, 1fr); gap: 8px; font-size: 12px; font-weight: 600; color: #1d2433; }
figure.diff .caps span { text-align: center; }
figure.diff figcaption { font-size: 12px; color: #5b6680; }
figure.region { margin: 6px 0; }
figure.region figcaption { font-size: 12px; color: #5b6680; }
</style></head><body>
<h1>Spotter test report</h1>
<p class="sum">{{.Passed}} passed, {{.Failed}} failed, {{len .Tests}} tests in {{dur .Elapsed}}. JUnit: <a href="{{.JUnit}}">{{.JUnit}}</a></p>
<table><tr><th>test</th><th>result</th><th>time</th><th>steps</th></tr>
{{range .Tests}}<tr><td><a href="#{{.Dir}}">{{.Name}}</a></td><td>{{if .OK}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}}</td><td>{{dur .Elapsed}}</td><td>{{.Outcome.Steps}}</td></tr>
{{end}}</table>
{{range .Tests}}
<section class="test" id="{{.Dir}}">
<h2>{{if .OK}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}} {{.Name}}</h2>
<div class="cap">{{.File}} · {{.Outcome.Stop}} after {{.Outcome.Steps}} steps, {{.Outcome.Calls}} calls ({{.Outcome.Failed}} failed) · {{dur .Elapsed}}{{if .Report}} · <a href="{{.Report}}">full trace report</a>{{end}}</div>
{{if .Failure}}<pre class="failure">{{.Failure}}</pre>{{end}}
{{if .Outcome.Text}}<p><b>Model:</b> {{.Outcome.Text}}</p>{{end}}
{{if .Checks}}<table><tr><th>check</th><th></th><th>detail</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td>{{if .OK}}<span class="pass">ok</span>{{else}}<span class="fail">FAIL</span>{{end}}</td><td>{{.Detail}}
{{if and .Actual (not .Diff)}}<figure class="region"><img src="{{.Actual}}" alt="the captured region"><figcaption>actual: the region as captured</figcaption></figure>{{end}}{{if .Diff}}<figure class="diff"><div class="caps" aria-hidden="true"><span>baseline</span><span>actual</span><span>difference</span></div><img class="diff" src="{{.Diff}}" alt="left: the baseline; middle: the actual capture; right: the difference, changed pixels in red"><figcaption>Baseline (the stored image), actual (this run's capture), difference (changed pixels in red)</figcaption></figure>{{end}}</td></tr>
{{end}}</table>{{end}}
{{with .Replay}}<div class="replay">{{if .Replayed}}<p><b>Replay</b>{{if .HealedAt}}: healed by the model from step {{.HealedAt}}{{end}}</p>{{end}}
{{range .Divergences}}<p class="fail">Diverged at step {{.Step}} (difference {{score .Score}}): {{.Err}}</p>{{if .Diff}}<figure class="diff"><div class="caps" aria-hidden="true"><span>recorded</span><span>actual</span><span>difference</span></div><img class="diff" src="{{.Diff}}" alt="left: the recorded screen; middle: the screen now; right: the difference, changed pixels in red"><figcaption>Recorded (the screen the recording saw), actual (the screen now), difference (changed pixels in red)</figcaption></figure>{{end}}
{{end}}{{if .Recorded}}<p class="cap">Recorded for replay in {{.Recorded}}</p>{{end}}</div>{{end}}
{{if .GIF}}<details open><summary>Animated replay</summary><img class="gif" src="{{.GIF}}" alt="animated replay of the run"></details>{{end}}
<div class="timeline">{{range .Shots}}<div class="shot"><div class="pic"><img src="{{.Src}}" alt="screenshot {{.FrameID}}" loading="lazy">{{range .MarkStyles}}<span class="mark" style="{{.}}"></span>{{end}}</div>
<div class="cap">{{.FrameID}}{{if .Step}} · after step {{.Step}}{{end}}{{if .Did}} · then: {{range $i, $d := .Did}}{{if $i}}, {{end}}{{$d}}{{end}}{{end}}{{if .Error}} · <span class="fail">{{.Error}}</span>{{end}}</div></div>{{end}}</div>
</section>
{{end}}
</body></html>
`
