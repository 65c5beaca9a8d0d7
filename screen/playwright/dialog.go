package playwright

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// Dialog reports the JavaScript dialog that blocks the page, if any. It
// does not wait for Capture or Perform, so an approver may ask while they
// run (a beforeunload dialog, which leaves the page when accepted, is one
// to ask a human about).
func (d *Display) Dialog() (screen.Dialog, bool) {
	dl, info, _ := d.tab().state.currentDialog()
	return info, dl != nil
}

// answerDialog performs the Dialog action. It does not go through run: the
// call that the dialog interrupted holds the display's turn until the
// dialog is answered.
func (d *Display) answerDialog(ctx context.Context, a actions.Action) error {
	dl, info, _ := d.tab().state.currentDialog()
	if dl == nil {
		return errors.New("no JavaScript dialog is open")
	}
	if a.Text != "" && info.Type != "prompt" {
		return fmt.Errorf("%w: text answers a prompt only, and the open dialog is %s", actions.ErrInvalid, info.String())
	}
	if err := d.check(); err != nil {
		return err
	}
	done := make(chan error, 1)
	d.wg.Go(func() {
		if a.Accept {
			done <- dl.Accept(a.Text)
		} else {
			done <- dl.Dismiss()
		}
	})
	t := time.NewTimer(d.cfg.CommandTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return d.translate(ctx, fmt.Errorf("answer the dialog: %w", err))
		}
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return fmt.Errorf("answer the dialog: no answer within %v: %w", d.cfg.CommandTimeout, ErrUnresponsive)
	case <-d.closed:
		return fmt.Errorf("display closed: %w", screen.ErrGone)
	}
	d.tab().state.answered(dl)
	verb := "dismissed"
	if a.Accept {
		verb = "accepted"
	}
	d.tab().state.note("%s was %s.", info.String(), verb)
	return nil
}

// upload performs the Upload action: it hands files to the open file
// chooser, then asks the page's file input what it received. The Policy
// decides which paths the model may name; the display refuses paths it
// cannot find. A connected browser gets the files' bytes through the
// Playwright connection.
func (d *Display) upload(files []string) error {
	fc := d.tab().state.fileChooser()
	if fc == nil {
		return errors.New("no file chooser is open; click the page's upload control first")
	}
	if !fc.IsMultiple() && len(files) > 1 {
		return fmt.Errorf("%w: the file chooser takes one file, got %d", actions.ErrInvalid, len(files))
	}
	abs, err := screen.UploadPaths(files, d.b.cfg.UploadDir)
	if err != nil {
		return err
	}
	want, err := screen.FilesOf(abs)
	if err != nil {
		return err
	}
	timeout := new(float64(d.cfg.CommandTimeout.Milliseconds()))
	el := fc.Element()
	// The change event that handing over files fires is watched on the
	// input itself, so that what it received is known even when the page
	// empties the input at once. Playwright evaluates in the page's own
	// world, which the page's scripts share (hitjs.WatchFiles).
	watching := el != nil
	if watching {
		if _, err := el.Evaluate(hitjs.WatchFiles, nil); err != nil {
			watching = false
		}
	}
	if err := fc.SetFiles(abs, pw.FileChooserSetFilesOptions{Timeout: timeout}); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	d.tab().state.clearChooser(fc)
	var got []screen.File
	if watching {
		v, err := el.Evaluate(hitjs.ReceivedFiles, nil)
		if err != nil {
			return fmt.Errorf("upload: the files were handed to the page, but what its file input received is unknown: %w", err)
		}
		b, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &got)
		}
		if err != nil {
			return fmt.Errorf("upload: the files were handed to the page, but its answer is not a list of files: %w", err)
		}
	}
	note, err := screen.UploadResult(want, got, watching)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	d.tab().state.note("%s", note)
	return nil
}
