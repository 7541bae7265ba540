package api

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/compress"
	"github.com/gofiber/fiber/v2/middleware/etag"

	"github.com/business-suite/suite/docs"
)

// LoadOpenAPI parses the embedded OpenAPI document.
func LoadOpenAPI() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("parse docs/openapi.yaml: %w", err)
	}
	return doc, nil
}

var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := LoadOpenAPI()
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
})

// The API reference viewer: Swagger UI (swagger-ui-dist from the npm
// registry, version and integrity pinned in the Makefile, `make swagger-ui`)
// checked in under swagger-ui/dist, with our own page and start script.
//
//go:embed swagger-ui/index.html swagger-ui/init.js swagger-ui/dist
var swaggerUI embed.FS

// viewerCSP lets the reference page load and call nothing but this server:
// the viewer works on closed networks, and a page that tried to reach
// anywhere else would be stopped by the browser.
const viewerCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// viewerAsset is one file served under /docs/assets/.
type viewerAsset struct {
	body        []byte
	contentType string
}

// viewerAssets are the files under /docs/assets/, by name (the names are
// listed in docs/openapi.yaml).
var viewerAssets = sync.OnceValue(func() map[string]viewerAsset {
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".txt": fiber.MIMETextPlainCharsetUTF8}
	assets := map[string]viewerAsset{}
	add := func(file string) {
		body, err := swaggerUI.ReadFile(file)
		if err != nil {
			panic(err) // embedded at build time: cannot fail
		}
		contentType, ok := types[path.Ext(file)]
		if !ok {
			contentType = fiber.MIMETextPlainCharsetUTF8 // LICENSE, NOTICE
		}
		assets[path.Base(file)] = viewerAsset{body: body, contentType: contentType}
	}
	add("swagger-ui/init.js")
	entries, err := swaggerUI.ReadDir("swagger-ui/dist")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		add("swagger-ui/dist/" + e.Name())
	}
	return assets
})

// mountReference serves the OpenAPI document (/openapi.json, /openapi.yaml),
// the Swagger UI reference at /docs with its files under /docs/assets/, and
// a pointer from / to /docs.
func mountReference(app *fiber.App) {
	app.Get("/", func(c *fiber.Ctx) error {
		c.Location("/docs")
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Status(fiber.StatusFound).SendString(`<a href="/docs">API reference</a>` + "\n")
	})
	app.Get("/openapi.json", func(c *fiber.Ctx) error {
		js, err := openAPIJSON()
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(js)
	})
	app.Get("/openapi.yaml", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "application/yaml; charset=utf-8")
		return c.Send(docs.OpenAPI)
	})
	// Revalidated on every load (ETag), compressed for remote readers.
	cache := []fiber.Handler{compress.New(), etag.New(), func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		return c.Next()
	}}
	app.Get("/docs", append(cache, func(c *fiber.Ctx) error {
		page, err := swaggerUI.ReadFile("swagger-ui/index.html")
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentSecurityPolicy, viewerCSP)
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Send(page)
	})...)
	app.Get("/docs/assets/:file", append(cache, func(c *fiber.Ctx) error {
		asset, ok := viewerAssets()[c.Params("file")]
		if !ok {
			return fiber.ErrNotFound
		}
		c.Set(fiber.HeaderContentType, asset.contentType)
		return c.Send(asset.body)
	})...)
}
