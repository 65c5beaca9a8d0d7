// Package examples holds the example task files, QA suite, rules and
// cassettes, and embeds what the spotter binary itself needs of them: the
// cassette of the built-in demo, which `spotter serve` offers as a model
// that needs no key.
package examples

import _ "embed"

// DemoCassette is cassettes/demo-anthropic.json: Claude doing the demo task
// on the built-in demo app (examples/demo-anthropic.yaml).
//
//go:embed cassettes/demo-anthropic.json
var DemoCassette []byte
