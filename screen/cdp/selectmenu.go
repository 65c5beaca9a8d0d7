package cdp

import (
	"context"

	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// Native <select> menus are drawn in the page (hitjs.SelectMenu), as
// headless Chromium draws their popup nowhere.

// installSelectMenus adds the select script to the active tab's documents,
// present and future.
func (d *Display) installSelectMenus(ctx context.Context) error {
	_, err := call(ctx, d, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source:         hitjs.SelectMenu,
		WorldName:      hitjs.SelectWorld,
		RunImmediately: new(true),
	})
	return err
}
