package apitest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/business-suite/suite/api"
)

var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := api.LoadOpenAPI()
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return gorillamux.NewRouter(doc)
})

func init() {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
	// /openapi.yaml is documented as text, not as the object it encodes.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("message/rfc822", openapi3filter.PlainBodyDecoder)
}

var validationOptions = &openapi3filter.Options{
	AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus:   true,
	MultiError:              true,
	SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableJSONSchema2020()},
}

// checkSpec validates one exchange against docs/openapi.yaml. Every
// response must be documented (status and body). The request is checked
// too when the API accepted it: an accepted request that the spec would
// refuse means the spec and the handler disagree. Requests the API refused
// are deliberately malformed by the tests and not checked.
func checkSpec(t testing.TB, method, path string, header http.Header, body []byte, resp *Response) {
	t.Helper()
	router, err := specRouter()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	req := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, bytes.NewReader(body))
	req.Header = header.Clone()
	route, params, err := router.FindRoute(req)
	if err != nil {
		if errors.Is(err, routers.ErrPathNotFound) && resp.Status == http.StatusNotFound {
			return // a route that does not exist, and the API agrees
		}
		if errors.Is(err, routers.ErrMethodNotAllowed) && (resp.Status == http.StatusMethodNotAllowed || resp.Status == http.StatusNotFound) {
			return
		}
		t.Fatalf("%s %s answered %d but is not in docs/openapi.yaml: %v", method, path, resp.Status, err)
	}
	reqInput := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: validationOptions}
	if resp.Status < 400 {
		if err := openapi3filter.ValidateRequest(context.Background(), reqInput); err != nil {
			t.Fatalf("%s %s was accepted (%d) but the request violates docs/openapi.yaml:\n%v", method, path, resp.Status, err)
		}
	}
	respInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 resp.Status,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(resp.Body)),
		Options:                validationOptions,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), respInput); err != nil {
		t.Fatalf("%s %s → %d violates docs/openapi.yaml:\n%v\nbody: %s", method, path, resp.Status, err, resp.Body)
	}
}
