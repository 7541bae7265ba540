// Package api builds the suite's HTTP application: one Fiber app serving the
// CRM (/crm), Helpdesk (/helpdesk), Generative AI (/v1/ai) and identity
// (/identity) interfaces behind shared middleware, plus health, readiness,
// metrics and the OpenAPI reference.
package api
