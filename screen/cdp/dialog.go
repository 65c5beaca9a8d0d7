package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
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
// chooser, then asks the page's file input what it holds. The Policy
// decides which paths the model may name; the display refuses paths it
// cannot find. A browser that does not share the host's file system gets
// copies (Config.StageFiles).
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
	want, err := screen.FilesOf(abs)
	if err != nil {
		return err
	}
	paths := abs
	if d.cfg.stageFiles != nil {
		if paths, err = d.cfg.stageFiles(ctx, abs); err != nil {
			return fmt.Errorf("upload: copy the files to the browser: %w", err)
		}
	}
	in, err := d.watchInput(ctx, fc)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if in != "" {
		defer call(context.WithoutCancel(ctx), d, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: in})
	}
	if _, err := call(ctx, d, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: paths, BackendNodeID: fc.BackendNodeID}); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	d.state.clearChooser()
	var got []screen.File
	if in != "" {
		if got, err = d.inputFiles(ctx, in); err != nil {
			return fmt.Errorf("upload: the files were handed to the page, but what its file input received is unknown: %w", err)
		}
	}
	note, err := screen.UploadResult(want, got, in != "")
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	d.notes.add("%s", note)
	return nil
}

// watchInput starts watching the file input of the chooser fc
// (hitjs.WatchFiles), from an isolated world that the page's own scripts
// can neither see nor change, and returns the input's object there, which
// the caller must release; "" for a chooser of no input element.
func (d *Display) watchInput(ctx context.Context, fc *page.EventFileChooserOpened) (runtime.RemoteObjectID, error) {
	if fc.BackendNodeID == 0 {
		return "", nil
	}
	w, err := call(ctx, d, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: fc.FrameID, WorldName: evalWorld})
	if err != nil {
		return "", err
	}
	node, err := call(ctx, d, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: fc.BackendNodeID, ExecutionContextID: w.ExecutionContextID})
	if err != nil {
		return "", err
	}
	if node.Object == nil || node.Object.ObjectID == "" {
		return "", errors.New("the file input is gone")
	}
	id := node.Object.ObjectID
	if _, err := d.callOn(ctx, id, hitjs.WatchFiles); err != nil {
		call(context.WithoutCancel(ctx), d, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: id})
		return "", err
	}
	return id, nil
}

// inputFiles answers what the file input in received (hitjs.ReceivedFiles).
func (d *Display) inputFiles(ctx context.Context, in runtime.RemoteObjectID) ([]screen.File, error) {
	v, err := d.callOn(ctx, in, hitjs.ReceivedFiles)
	if err != nil {
		return nil, err
	}
	var files []screen.File
	if err := json.Unmarshal(v, &files); err != nil {
		return nil, fmt.Errorf("the answer %s: %v", clipErr(string(v)), err)
	}
	return files, nil
}

// callOn calls the function fn with the object id as its argument, and
// returns its value as JSON.
func (d *Display) callOn(ctx context.Context, id runtime.RemoteObjectID, fn string) (json.RawMessage, error) {
	res, err := call(ctx, d, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn, ObjectID: id, Arguments: []*runtime.CallArgument{{ObjectID: id}},
		ReturnByValue: new(true), Silent: new(true),
	})
	switch {
	case err != nil:
		return nil, err
	case res.ExceptionDetails != nil:
		return nil, fmt.Errorf("%w: %s", ErrScript, clipErr(res.ExceptionDetails.Text))
	case res.Result == nil:
		return nil, errors.New("no answer")
	}
	return json.RawMessage(res.Result.Value), nil
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
