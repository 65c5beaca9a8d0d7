// Package docs embeds what the spotter binary serves of the documentation:
// the OpenAPI description of `spotter serve` (openapi.yaml), which the
// server answers at /openapi.yaml, the web package's tests validate every
// request and answer against, and clients/typescript generates its types
// from.
package docs

import _ "embed"

// OpenAPI is openapi.yaml, the contract of `spotter serve`.
//
//go:embed openapi.yaml
var OpenAPI []byte
