// Package docs embeds the OpenAPI document (openapi.yaml), the source of
// truth for every route: the API serves it at /openapi.json and /openapi.yaml
// (rendered by Swagger UI at /docs), and the test harness validates every
// request and response against it.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
