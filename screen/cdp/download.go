package cdp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// Downloads. A display saves the downloads of its pages into a directory
// of its own (DisplayConfig.DownloadDir, or a new directory below
// Config.DownloadDir), at most MaxDownloads of them and each at most
// MaxDownloadBytes; a download beyond a limit is canceled. Every download,
// saved or not, leaves a note for the model, which the loop puts in the
// call's result and the trace. Without a directory, downloads are refused.
//
// Chromium saves a download under its GUID while it runs; once complete
// the display renames it to the name the server suggested, made safe (no
// directories, no leading dot) and unique in the directory.

// downloads is the state of a display's downloads. The browser's event
// loop queues events (onEvent); the display's own goroutine (watch)
// handles them, as handling one may need a command.
type downloads struct {
	dir      string // "" while downloads are refused
	maxCount int
	maxBytes int64

	mu     sync.Mutex
	states []*pageState // the pages of the display's tabs: whose frames are the display's
	queue  []any
	wake   chan struct{}
	active map[string]*download // by GUID: downloads of the display, begun and not yet ended
	count  int                  // downloads begun
}

type download struct {
	url, name string
}

// setupDownloads sets the browser context's download behaviour and starts
// the goroutine that watches downloads, which ends when the display
// closes.
func (d *Display) setupDownloads(ctx context.Context) error {
	if d.browser == nil || d.bctx == nil {
		return nil
	}
	dl := &d.dl
	dl.maxCount, dl.maxBytes = d.cfg.MaxDownloads, d.cfg.MaxDownloadBytes
	dl.wake = make(chan struct{}, 1)
	dl.active = make(map[string]*download)
	switch {
	case d.cfg.DownloadDir != "":
		if err := os.MkdirAll(d.cfg.DownloadDir, 0o755); err != nil {
			return fmt.Errorf("download directory: %w", err)
		}
		dl.dir = d.cfg.DownloadDir
	case d.cfg.downloadRoot != "":
		if err := os.MkdirAll(d.cfg.downloadRoot, 0o755); err != nil {
			return fmt.Errorf("download directory: %w", err)
		}
		dir, err := os.MkdirTemp(d.cfg.downloadRoot, "display-")
		if err != nil {
			return fmt.Errorf("download directory: %w", err)
		}
		dl.dir = dir
	}
	if dl.dir != "" {
		abs, err := filepath.Abs(dl.dir)
		if err != nil {
			return fmt.Errorf("download directory: %w", err)
		}
		dl.dir = abs
	}
	p := cdpbrowser.SetDownloadBehaviorParams{
		Behavior:         cdpbrowser.SetDownloadBehaviorBehaviorDeny,
		BrowserContextID: d.bcID,
		EventsEnabled:    new(true),
	}
	if dl.dir != "" {
		p.Behavior, p.DownloadPath = cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, dl.dir
	}
	if _, err := browserCall(ctx, d, cdpbrowser.SetDownloadBehavior, p); err != nil {
		return fmt.Errorf("download behaviour: %w", err)
	}
	lctx, lcancel := context.WithCancel(d.bctx)
	context.AfterFunc(d.bg, lcancel)
	if err := chromedp.ListenBrowser(lctx, dl.onEvent); err != nil {
		lcancel()
		return fmt.Errorf("watch downloads: %w", err)
	}
	d.wg.Go(d.watchDownloads)
	return nil
}

// DownloadDir returns the directory the display saves downloads in, or ""
// if it refuses them.
func (d *Display) DownloadDir() string { return d.dl.dir }

// addState makes the frames of a tab's page count as the display's.
func (dl *downloads) addState(st *pageState) {
	dl.mu.Lock()
	dl.states = append(dl.states, st)
	dl.mu.Unlock()
}

// onEvent queues download events; it runs on the browser's event loop.
func (dl *downloads) onEvent(ev any) {
	switch ev.(type) {
	case *cdpbrowser.EventDownloadWillBegin, *cdpbrowser.EventDownloadProgress:
	default:
		return
	}
	dl.mu.Lock()
	dl.queue = append(dl.queue, ev)
	dl.mu.Unlock()
	poke(dl.wake)
}

func (dl *downloads) take() []any {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	q := dl.queue
	dl.queue = nil
	return q
}

func (dl *downloads) ours(frame cdp.FrameID) bool {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	for _, st := range dl.states {
		if st.hasFrame(frame) {
			return true
		}
	}
	return false
}

// watchDownloads handles download events until the display closes.
func (d *Display) watchDownloads() {
	dl := &d.dl
	for {
		select {
		case <-d.bg.Done():
			return
		case <-dl.wake:
		}
		for _, ev := range dl.take() {
			switch ev := ev.(type) {
			case *cdpbrowser.EventDownloadWillBegin:
				d.downloadBegins(ev)
			case *cdpbrowser.EventDownloadProgress:
				d.downloadProgress(ev)
			}
		}
	}
}

func (d *Display) downloadBegins(ev *cdpbrowser.EventDownloadWillBegin) {
	dl := &d.dl
	if !dl.ours(ev.FrameID) {
		return
	}
	name := safeName(ev.SuggestedFilename)
	if dl.dir == "" {
		d.notes.add("A download of %s (%s) was refused: this session keeps no downloads.", name, clipText(ev.URL, 200))
		return
	}
	dl.count++
	if dl.count > dl.maxCount {
		d.cancelDownload(ev.GUID)
		d.notes.add("A download of %s (%s) was canceled: this session keeps at most %d downloads.", name, clipText(ev.URL, 200), dl.maxCount)
		return
	}
	dl.active[ev.GUID] = &download{url: ev.URL, name: name}
}

func (d *Display) downloadProgress(ev *cdpbrowser.EventDownloadProgress) {
	dl := &d.dl
	x, ok := dl.active[ev.GUID]
	if !ok {
		return
	}
	partial := filepath.Join(dl.dir, ev.GUID)
	if int64(ev.ReceivedBytes) > dl.maxBytes || int64(ev.TotalBytes) > dl.maxBytes {
		delete(dl.active, ev.GUID)
		d.cancelDownload(ev.GUID)
		os.Remove(partial) // may not exist yet
		d.notes.add("A download of %s (%s) was canceled: it is larger than this session's limit of %d bytes.", x.name, clipText(x.url, 200), dl.maxBytes)
		return
	}
	switch ev.State {
	case cdpbrowser.DownloadProgressStateCompleted:
		delete(dl.active, ev.GUID)
		dst, err := uniquePath(dl.dir, x.name)
		if err == nil {
			err = os.Rename(partial, dst)
		}
		if err != nil {
			d.notes.add("A download of %s (%s) finished but could not be saved: %v", x.name, clipText(x.url, 200), err)
			return
		}
		d.notes.add("Downloaded %s (%d bytes) from %s into the session's downloads as %s.", x.name, int64(ev.ReceivedBytes),
			clipText(x.url, 200), filepath.Base(dst))
	case cdpbrowser.DownloadProgressStateCanceled:
		delete(dl.active, ev.GUID)
		os.Remove(partial)
		d.notes.add("A download of %s (%s) was canceled.", x.name, clipText(x.url, 200))
	}
}

// cancelDownload cancels a download; it runs on the download goroutine.
func (d *Display) cancelDownload(guid string) {
	ctx, cancel := context.WithTimeout(d.bg, d.cfg.CommandTimeout)
	defer cancel()
	// An error leaves nothing to do: the download ended already, or the
	// browser is gone.
	_, _ = cdp.Call(ctx, d.browser, cdpbrowser.CancelDownload, cdpbrowser.CancelDownloadParams{GUID: guid, BrowserContextID: d.bcID})
}

// safeName makes a server's suggested file name safe to save: its last
// path element, without control characters or a leading dot.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, s)
	s = strings.TrimLeft(strings.TrimSpace(s), ".")
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	if s == "" {
		s = "download"
	}
	return s
}

// uniquePath returns dir/name, or dir/name-2.ext and so on if that exists.
func uniquePath(dir, name string) (string, error) {
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	for i := 1; i < 1000; i++ {
		p := filepath.Join(dir, name)
		if i > 1 {
			p = filepath.Join(dir, fmt.Sprintf("%s-%d%s", base, i, ext))
		}
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free name for %s", name)
}
