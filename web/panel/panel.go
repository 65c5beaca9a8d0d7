// Package panel holds the web approval panel's static assets: one page
// (index.html) with its script and style sheet, plain HTML, CSS and
// JavaScript with no build step and nothing loaded from elsewhere.
//
// FS is rooted so that index.html is at its top. The server serves FS at
// "/" and answers GET /login with index.html too; the assets hold no data,
// so they may be served before the operator has logged in. The page finds
// out whether it is logged in by asking GET /sessions: a 401 shows the login
// form, which posts the token to POST /login and then opens the panel.
//
// The page talks only to the HTTP API of docs/API.md. Everything it shows
// that came from a page or a model (element names, model text, URLs) is
// set as text, never parsed as HTML.
package panel

import "embed"

// FS holds index.html, app.js, style.css and favicon.svg.
//
//go:embed index.html app.js style.css favicon.svg
var FS embed.FS
