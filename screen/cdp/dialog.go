package cdp

import (
	"context"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Dialog reports the JavaScript dialog open in the active tab, if any. It
// does not wait for Capture or Perform, so an approver may ask while they
// run (a beforeunload dialog, which leaves the page when accepted, is one
// to ask a human about).
func (d *Display) Dialog() (screen.Dialog, bool) {
	dl, ok, _ := d.activeState().currentDialog()
	return dl, ok
}

// autoDismiss dismisses an open dialog when the display is configured to,
// and leaves a note saying so. It runs under mu.
func (d *Display) autoDismiss(ctx context.Context) error {
	if !d.cfg.DismissDialogs {
		return nil
	}
	dl, ok, _ := d.state.currentDialog()
	if !ok {
		return nil
	}
	if err := d.handleDialog(ctx, false, ""); err != nil {
		return err
	}
	d.notes.add("%s opened and was dismissed automatically.", dl.String())
	return nil
}

// handleDialog answers the open dialog.
func (d *Display) handleDialog(ctx context.Context, accept bool, text string) error {
	p := page.HandleJavaScriptDialogParams{Accept: accept}
	if text != "" {
		p.PromptText = text
	}
	if _, err := callFree(ctx, d, page.HandleJavaScriptDialog, p); err != nil {
		return fmt.Errorf("answer the dialog: %w", err)
	}
	return nil
}

// answerDialog performs the Dialog action.
func (d *Display) answerDialog(ctx context.Context, a actions.Action) error {
	dl, ok, _ := d.state.currentDialog()
	if !ok {
		return errors.New("no JavaScript dialog is open")
	}
	if a.Text != "" && dl.Type != "prompt" {
		return fmt.Errorf("%w: text answers a prompt only, and the open dialog is %s", actions.ErrInvalid, dl.String())
	}
	if err := d.handleDialog(ctx, a.Accept, a.Text); err != nil {
		return err
	}
	verb := "dismissed"
	if a.Accept {
		verb = "accepted"
	}
	d.notes.add("%s was %s.", dl.String(), verb)
	return nil
}

// upload performs the Upload action: it hands files to the open file
// chooser. The Policy decides which paths the model may name; the display
// refuses paths it cannot find.
func (d *Display) upload(ctx context.Context, files []string) error {
	fc := d.state.fileChooser()
	if fc == nil {
		return errors.New("no file chooser is open; click the page's upload control first")
	}
	if fc.Mode != page.FileChooserOpenedModeSelectMultiple && len(files) > 1 {
		return fmt.Errorf("%w: the file chooser takes one file, got %d", actions.ErrInvalid, len(files))
	}
	abs, err := screen.UploadPaths(files, d.cfg.UploadDir)
	if err != nil {
		return err
	}
	if _, err := call(ctx, d, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: abs, BackendNodeID: fc.BackendNodeID}); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	d.state.clearChooser()
	d.notes.add("%d file(s) were handed to the file chooser.", len(files))
	return nil
}

// callFree is call without the early end on a dialog: for commands that
// work while a dialog is open, such as answering it.
func callFree[P, R any](ctx context.Context, d *Display, c cdp.Command[P, R], p P) (R, error) {
	cctx, cancel := context.WithTimeout(ctx, d.cfg.CommandTimeout)
	defer cancel()
	r, err := cdp.Call(cctx, d.t, c, p)
	if err != nil {
		if cause := d.goneCause(); cause != "" {
			return r, fmt.Errorf("%s: %s: %w", c.Method, cause, screen.ErrGone)
		}
		if ctx.Err() != nil {
			return r, fmt.Errorf("%s: %w", c.Method, context.Cause(ctx))
		}
		return r, fmt.Errorf("%s: %v", c.Method, err)
	}
	return r, nil
}
