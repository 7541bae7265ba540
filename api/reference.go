package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"

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

var reference = sync.OnceValues(func() (*renderedReference, error) {
	doc, err := LoadOpenAPI()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var page bytes.Buffer
	if err := referenceTemplate.Execute(&page, referenceModel(doc)); err != nil {
		return nil, err
	}
	return &renderedReference{json: js, html: page.Bytes()}, nil
})

type renderedReference struct{ json, html []byte }

// mountReference serves /openapi.json and the rendered reference at /docs.
// Both are built once from the embedded document, on first request.
func mountReference(app *fiber.App) {
	app.Get("/openapi.json", func(c *fiber.Ctx) error {
		ref, err := reference()
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(ref.json)
	})
	app.Get("/docs", func(c *fiber.Ctx) error {
		ref, err := reference()
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Send(ref.html)
	})
}

type refOperation struct {
	Method, Path, Summary, Description, Anchor string
	Public                                     bool
	Params                                     []refParam
	Body                                       []refField
	Responses                                  []refResponse
}

type refParam struct {
	Name, In, Type, Description string
	Required                    bool
}
type refField struct {
	Name, Type, Description string
	Required                bool
}
type refResponse struct{ Status, Description string }
type refTag struct {
	Name, Description string
	Operations        []refOperation
}

func referenceModel(doc *openapi3.T) map[string]any {
	byTag := map[string]*refTag{}
	var order []string
	for _, t := range doc.Tags {
		byTag[t.Name] = &refTag{Name: t.Name, Description: t.Description}
		order = append(order, t.Name)
	}
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			ro := refOperation{Method: method, Path: path, Summary: op.Summary, Description: op.Description,
				Anchor: op.OperationID, Public: op.Security != nil && len(*op.Security) == 0}
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p.Value == nil {
					continue
				}
				ro.Params = append(ro.Params, refParam{Name: p.Value.Name, In: p.Value.In, Required: p.Value.Required,
					Type: schemaType(p.Value.Schema), Description: p.Value.Description})
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
					ro.Body = fieldsOf(mt.Schema.Value)
				}
			}
			codes := make([]string, 0)
			for code := range op.Responses.Map() {
				codes = append(codes, code)
			}
			sort.Strings(codes)
			for _, code := range codes {
				r := op.Responses.Value(code)
				desc := ""
				if r != nil && r.Value != nil && r.Value.Description != nil {
					desc = *r.Value.Description
				}
				ro.Responses = append(ro.Responses, refResponse{Status: code, Description: desc})
			}
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			if byTag[tag] == nil {
				byTag[tag] = &refTag{Name: tag}
				order = append(order, tag)
			}
			byTag[tag].Operations = append(byTag[tag].Operations, ro)
		}
	}
	tags := make([]refTag, 0, len(order))
	for _, name := range order {
		if len(byTag[name].Operations) > 0 {
			tags = append(tags, *byTag[name])
		}
	}
	return map[string]any{"Title": doc.Info.Title, "Version": doc.Info.Version, "Description": doc.Info.Description, "Tags": tags}
}

func fieldsOf(s *openapi3.Schema) []refField {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	out := make([]refField, 0, len(names))
	for _, name := range names {
		p := s.Properties[name]
		desc := ""
		if p.Value != nil {
			desc = p.Value.Description
		}
		out = append(out, refField{Name: name, Type: schemaType(p), Description: desc, Required: required[name]})
	}
	return out
}

func schemaType(ref *openapi3.SchemaRef) string {
	if ref == nil || ref.Value == nil {
		return ""
	}
	s := ref.Value
	var t string
	if s.Type != nil {
		t = strings.Join(s.Type.Slice(), " | ")
	}
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vals[i] = fmt.Sprint(v)
		}
		t += " (" + strings.Join(vals, ", ") + ")"
	}
	if s.Format != "" {
		t += " <" + s.Format + ">"
	}
	if t == "" && ref.Ref != "" {
		t = ref.Ref[strings.LastIndex(ref.Ref, "/")+1:]
	}
	return t
}

var referenceTemplate = template.Must(template.New("ref").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.Title}} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2433;background:#fafbfc}
nav{position:fixed;top:0;bottom:0;width:270px;overflow:auto;background:#fff;border-right:1px solid #e3e6ea;padding:16px}
nav a{display:block;color:#1d2433;text-decoration:none;font-size:13px;padding:2px 0}
main{margin-left:303px;padding:24px 40px;max-width:980px}
.op{background:#fff;border:1px solid #e3e6ea;border-radius:8px;padding:16px 20px;margin:16px 0}
.m{display:inline-block;min-width:58px;text-align:center;font-weight:600;font-size:12px;border-radius:4px;padding:2px 6px;color:#fff}
.GET{background:#2f7ed8}.POST{background:#1f9d55}.PUT{background:#c77c02}.PATCH{background:#8a4baf}.DELETE{background:#cc3340}
code,.path{font-family:ui-monospace,monospace}.path{font-weight:600}
table{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0}td,th{border-bottom:1px solid #eef0f2;text-align:left;padding:4px 8px;vertical-align:top}
.pub{font-size:11px;background:#eef6ee;color:#1f7a3a;border-radius:4px;padding:1px 6px;margin-left:6px}
pre{white-space:pre-wrap;background:#f3f5f7;padding:12px;border-radius:6px}
</style></head><body>
<nav><strong>{{.Title}}</strong> <small>v{{.Version}}</small><p><a href="/openapi.json">openapi.json</a></p>
{{range .Tags}}<p><strong>{{.Name}}</strong></p>{{range .Operations}}<a href="#{{.Anchor}}"><span class="m {{.Method}}">{{.Method}}</span> {{.Path}}</a>{{end}}{{end}}</nav>
<main><h1>{{.Title}}</h1><pre>{{.Description}}</pre>
{{range .Tags}}<h2>{{.Name}}</h2><p>{{.Description}}</p>
{{range .Operations}}<div class="op" id="{{.Anchor}}"><span class="m {{.Method}}">{{.Method}}</span> <span class="path">{{.Path}}</span>{{if .Public}}<span class="pub">public</span>{{end}}
<p><strong>{{.Summary}}</strong></p>{{if .Description}}<p>{{.Description}}</p>{{end}}
{{if .Params}}<table><tr><th>parameter</th><th>in</th><th>type</th><th>description</th></tr>{{range .Params}}<tr><td><code>{{.Name}}</code>{{if .Required}} *{{end}}</td><td>{{.In}}</td><td>{{.Type}}</td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{if .Body}}<table><tr><th>body field</th><th>type</th><th>description</th></tr>{{range .Body}}<tr><td><code>{{.Name}}</code>{{if .Required}} *{{end}}</td><td>{{.Type}}</td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
<table><tr><th>status</th><th>meaning</th></tr>{{range .Responses}}<tr><td>{{.Status}}</td><td>{{.Description}}</td></tr>{{end}}</table></div>{{end}}{{end}}
</main></body></html>`))
