package api_test

import (
	"cmp"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/cmd/apitest"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/models"
)

// The structural guard of tenancy (DESIGN §10): every route registered on
// the Fiber app is either in this table or the test fails, so a route
// added tomorrow (billing, AI) is probed the day it lands. Each
// tenant-scoped route is called with another organization's credentials
// of every type that interface takes — naming the first organization, and
// with the other organization's own scope but the first one's ids — and
// must answer 404 (never a 403 that would confirm the ids exist) and
// change nothing of the first organization's data.

// probeKind says how a route is probed.
type probeKind int

const (
	// notTenant: the route is not scoped to an organization (health,
	// documents, identity, the caller's own organization list); reason
	// says why.
	notTenant probeKind = iota
	// crmData: a CRM route that names the organization with orgId
	// (query, or body on writes) for users; keys act in their own.
	crmData
	// crmOrg: a CRM route with the organization in the path (:id).
	crmOrg
	// helpdesk: a Helpdesk route (x-workspace-id).
	helpdesk
	// ai: an AI route (/v1/ai, an ai_ key acting in its own organization):
	// called with the other organization's key and the first one's ids
	// (params and body).
	ai
	// special: probed by its own function.
	special
)

// probe describes one route.
type probe struct {
	kind probeKind
	// params maps a path parameter to the kind of the first
	// organization's resource that fills it (crmOrg's :id is the
	// organization itself).
	params map[string]string
	// body builds a valid request body; orgID is "" when the caller must
	// not name an organization (keys acting in their own).
	body func(a *tenant, orgID string) map[string]any
	// reason documents a notTenant route.
	reason string
	// check probes a special route.
	check func(t *testing.T, e *apitest.Env, a, b *tenant)
	// usersOnly: the route takes user tokens only (keys are refused for
	// their type, whatever the ids), so only users are probed with ids.
	usersOnly bool
}

// tenant is an organization with one of everything, and credentials of
// every type.
type tenant struct {
	org                           string
	owner                         *apitest.User
	crmKey, hdKey, aiKey          string
	ids                           map[string]string
	invitationToken, invitedEmail string
}

func withOrg(orgID string, fields map[string]any) map[string]any {
	if orgID != "" {
		fields["orgId"] = orgID
	}
	return fields
}

func fields(kv ...any) func(*tenant, string) map[string]any {
	return func(_ *tenant, orgID string) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return withOrg(orgID, m)
	}
}

// hdFields is fields for Helpdesk bodies (no orgId: the workspace is a
// header).
// probeRule is an automation rule: tickets tagged auto-probe wait a day,
// then get a tag.
func probeRule(*tenant, string) map[string]any {
	return map[string]any{"name": "Probe", "object": "ticket", "on": []string{"created"},
		"conditions": map[string]any{"all": []any{map[string]any{"field": "tags", "operator": "includes", "value": "auto-probe"}}},
		"steps":      []any{map[string]any{"action": "delay", "duration": "P1D"}, map[string]any{"action": "add_tags", "value": []string{"late"}}}}
}

// probeField is a custom field of contacts.
func probeField(*tenant, string) map[string]any {
	return map[string]any{"object": "contact", "key": "tier", "label": "Tier", "type": "select", "options": []string{"a", "b"}}
}

func hdFields(kv ...any) func(*tenant, string) map[string]any {
	f := fields(kv...)
	return func(a *tenant, _ string) map[string]any { return f(a, "") }
}

// staffConsole is why the console's pages are not tenant-scoped (see
// api/console's tests for who gets in).
const staffConsole = "the staff console: billing staff work across organizations (a staff session; others are sent to sign in)"

var tenantProbes = map[string]probe{
	// Not tenant-scoped.
	"GET /healthz":                          {reason: "process health"},
	"GET /readyz":                           {reason: "dependency health"},
	"GET /metrics":                          {reason: "Prometheus metrics"},
	"GET /openapi.json":                     {reason: "the API document"},
	"GET /docs":                             {reason: "the API reference"},
	"GET /":                                 {reason: "redirect to the API reference"},
	"GET /openapi.yaml":                     {reason: "the API document"},
	"GET /docs/assets/:file":                {reason: "the API reference's static files"},
	"GET /.well-known/jwks.json":            {reason: "public signing keys"},
	"GET /.well-known/openid-configuration": {reason: "public discovery document"},
	"GET /identity/.well-known/jwks.json":   {reason: "public signing keys"},
	"GET /identity/.well-known/openid-configuration":      {reason: "public discovery document"},
	"POST /identity/v1/users":                             {reason: "sign-up"},
	"POST /identity/v1/token":                             {reason: "sign-in"},
	"POST /identity/v1/token/refresh":                     {reason: "the caller's own refresh token"},
	"GET /identity/v1/me":                                 {reason: "the caller's own account"},
	"PUT /identity/v1/orgs/:orgId":                        {reason: "service-to-service (identity service token)"},
	"DELETE /identity/v1/orgs/:orgId":                     {reason: "service-to-service (identity service token)"},
	"PUT /identity/v1/orgs/:orgId/members":                {reason: "service-to-service (identity service token)"},
	"GET /identity/v1/users/:userId/orgs":                 {reason: "service-to-service (identity service token)"},
	"GET /crm/organization":                               {reason: "lists the caller's own organizations"},
	"POST /crm/organization":                              {reason: "creates a new organization owned by the caller"},
	"GET /helpdesk/notifications/vapidPublicKey":          {reason: "the public web-push key"},
	"GET /helpdesk/public/kb/:workspaceId/categories":     {reason: "the public help center (published articles only, by design)"},
	"GET /helpdesk/public/kb/:workspaceId/search":         {reason: "the public help center (published articles only, by design)"},
	"GET /helpdesk/public/kb/:workspaceId/articles/:slug": {reason: "the public help center (published articles only, by design)"},
	"POST /helpdesk/payments/webhook":                     {reason: "Stripe's signed events: no suite credential, routed by Stripe's ids and metadata"},
	"GET /ops/v1/billing/changes":                         {reason: "billing staff work across organizations (staff claim; others 403)"},
	"GET /ops/v1/billing/changes/:id":                     {reason: "billing staff work across organizations (staff claim; others 403)"},
	"POST /ops/v1/billing/changes/:id/retry":              {reason: "billing staff work across organizations (staff claim; others 403)"},
	"GET /ops/static/console.css":                         {reason: "the staff console's stylesheet"},
	"GET /ops/sign-in":                                    {reason: "the staff console's sign-in page"},
	"POST /ops/sign-in":                                   {reason: "the staff console's sign-in (staff accounts only; others 403)"},
	"GET /ops/":                                           {reason: staffConsole},
	"GET /ops/changes":                                    {reason: staffConsole},
	"GET /ops/changes/:id":                                {reason: staffConsole},
	"GET /ops/changes/:id/retry":                          {reason: staffConsole},
	"POST /ops/changes/:id/retry":                         {reason: staffConsole},
	"GET /ops/organizations/:id":                          {reason: staffConsole},
	"GET /ops/audit":                                      {reason: staffConsole},
	"POST /ops/sign-out":                                  {reason: staffConsole},

	// CRM data routes.
	"GET /crm/contacts":              {kind: crmData},
	"GET /crm/contacts/duplicates":   {kind: crmData},
	"POST /crm/contacts":             {kind: crmData, body: fields("name", "Probe")},
	"GET /crm/contacts/:id":          {kind: crmData, params: map[string]string{"id": "contact"}},
	"GET /crm/contacts/:id/timeline": {kind: crmData, params: map[string]string{"id": "contact"}},
	"PUT /crm/contacts/:id":          {kind: crmData, params: map[string]string{"id": "contact"}, body: fields("name", "Changed")},
	"DELETE /crm/contacts/:id":       {kind: crmData, params: map[string]string{"id": "contact"}},
	"POST /crm/contacts/:id/merge": {kind: crmData, params: map[string]string{"id": "contact"},
		body: func(a *tenant, orgID string) map[string]any {
			return withOrg(orgID, map[string]any{"from": a.ids["duplicateContact"]})
		}},
	"GET /crm/deals":                {kind: crmData},
	"POST /crm/deals":               {kind: crmData, body: fields("title", "Probe", "amount", 1)},
	"GET /crm/deals/:id":            {kind: crmData, params: map[string]string{"id": "deal"}},
	"PUT /crm/deals/:id":            {kind: crmData, params: map[string]string{"id": "deal"}, body: fields("title", "Changed")},
	"DELETE /crm/deals/:id":         {kind: crmData, params: map[string]string{"id": "deal"}},
	"GET /crm/leads":                {kind: crmData},
	"POST /crm/leads":               {kind: crmData, body: fields("name", "Probe")},
	"GET /crm/leads/:id":            {kind: crmData, params: map[string]string{"id": "lead"}},
	"PUT /crm/leads/:id":            {kind: crmData, params: map[string]string{"id": "lead"}, body: fields("name", "Changed")},
	"DELETE /crm/leads/:id":         {kind: crmData, params: map[string]string{"id": "lead"}},
	"GET /crm/leads/:id/activities": {kind: crmData, params: map[string]string{"id": "lead"}},
	"POST /crm/leads/:id/activities": {kind: crmData, params: map[string]string{"id": "lead"},
		body: fields("type", "note", "body", "Probe")},
	"POST /crm/leads/:id/send-message": {kind: crmData, params: map[string]string{"id": "lead"},
		body: fields("channel", "sms", "text", "Probe")},
	"POST /crm/leads/:id/convert":    {kind: crmData, params: map[string]string{"id": "lead"}, body: fields()},
	"GET /crm/leads/intakes/:id":     {kind: crmData, params: map[string]string{"id": "intake"}},
	"GET /crm/tasks":                 {kind: crmData},
	"POST /crm/tasks":                {kind: crmData, body: fields("title", "Probe")},
	"GET /crm/tasks/:id":             {kind: crmData, params: map[string]string{"id": "task"}},
	"PUT /crm/tasks/:id":             {kind: crmData, params: map[string]string{"id": "task"}, body: fields("title", "Changed")},
	"DELETE /crm/tasks/:id":          {kind: crmData, params: map[string]string{"id": "task"}},
	"GET /crm/analytics":             {kind: crmData},
	"GET /crm/analytics/leaderboard": {kind: crmData},

	// CRM organization routes (the organization in the path).
	"GET /crm/organization/:id":          {kind: crmOrg},
	"PUT /crm/organization/:id":          {kind: crmOrg, body: hdFields("industry", "Changed")},
	"GET /crm/organization/:id/members":  {kind: crmOrg},
	"POST /crm/organization/:id/members": {kind: crmOrg, body: hdFields("email", "probe@example.com", "role", "AGENT")},
	"PUT /crm/organization/:id/members/:memberId": {kind: crmOrg, params: map[string]string{"memberId": "member"},
		body: hdFields("target", 5)},
	"DELETE /crm/organization/:id/members/:memberId":          {kind: crmOrg, params: map[string]string{"memberId": "member"}},
	"POST /crm/organization/:id/members/:memberId/invitation": {kind: crmOrg, params: map[string]string{"memberId": "invitedMember"}},
	"GET /crm/organization/:id/apikeys":                       {kind: crmOrg},
	"POST /crm/organization/:id/apikeys":                      {kind: crmOrg, body: hdFields("name", "Probe", "service", "crm")},
	"DELETE /crm/organization/:id/apikeys/:keyId":             {kind: crmOrg, params: map[string]string{"keyId": "apiKey"}},
	"GET /crm/organization/:id/webhooks":                      {kind: crmOrg},
	"POST /crm/organization/:id/webhooks": {kind: crmOrg,
		body: hdFields("url", "https://93.184.216.34/probe", "events", []string{"*"})},
	"GET /crm/organization/:id/webhooks/:wid":                {kind: crmOrg, params: map[string]string{"wid": "webhook"}},
	"PUT /crm/organization/:id/webhooks/:wid":                {kind: crmOrg, params: map[string]string{"wid": "webhook"}, body: hdFields("description", "Changed")},
	"DELETE /crm/organization/:id/webhooks/:wid":             {kind: crmOrg, params: map[string]string{"wid": "webhook"}},
	"POST /crm/organization/:id/webhooks/:wid/rotate-secret": {kind: crmOrg, params: map[string]string{"wid": "webhook"}},
	"POST /crm/organization/:id/webhooks/:wid/test":          {kind: crmOrg, params: map[string]string{"wid": "webhook"}},
	"GET /crm/organization/:id/webhooks/:wid/deliveries":     {kind: crmOrg, params: map[string]string{"wid": "webhook"}},
	"POST /crm/organization/:id/webhooks/:wid/deliveries/:did/replay": {kind: crmOrg,
		params: map[string]string{"wid": "webhook", "did": "webhookDelivery"}},
	"GET /crm/organization/:id/fields":                {kind: crmOrg},
	"POST /crm/organization/:id/fields":               {kind: crmOrg, body: probeField},
	"GET /crm/organization/:id/fields/:fid":           {kind: crmOrg, params: map[string]string{"fid": "field"}},
	"PATCH /crm/organization/:id/fields/:fid":         {kind: crmOrg, params: map[string]string{"fid": "field"}, body: hdFields("label", "Tier")},
	"DELETE /crm/organization/:id/fields/:fid":        {kind: crmOrg, params: map[string]string{"fid": "field"}},
	"GET /crm/organization/:id/automations":           {kind: crmOrg},
	"POST /crm/organization/:id/automations":          {kind: crmOrg, body: probeRule},
	"GET /crm/organization/:id/automations/:aid":      {kind: crmOrg, params: map[string]string{"aid": "automation"}},
	"PUT /crm/organization/:id/automations/:aid":      {kind: crmOrg, params: map[string]string{"aid": "automation"}, body: probeRule},
	"DELETE /crm/organization/:id/automations/:aid":   {kind: crmOrg, params: map[string]string{"aid": "automation"}},
	"GET /crm/organization/:id/automations/:aid/runs": {kind: crmOrg, params: map[string]string{"aid": "automation"}},
	"GET /crm/organization/:id/automations/:aid/runs/:rid": {kind: crmOrg,
		params: map[string]string{"aid": "automation", "rid": "automationRun"}},
	"POST /crm/organization/:id/automations/:aid/runs/:rid/cancel": {kind: crmOrg,
		params: map[string]string{"aid": "automation", "rid": "automationRun"}},
	"POST /crm/organization/:id/automations/:aid/test": {kind: crmOrg, params: map[string]string{"aid": "automation"},
		body: func(a *tenant, _ string) map[string]any { return map[string]any{"objectId": a.ids["ticket"]} }},

	// Helpdesk routes.
	"GET /helpdesk/tickets":               {kind: helpdesk},
	"POST /helpdesk/tickets":              {kind: helpdesk, body: hdFields("subject", "Probe", "email", "probe@example.com")},
	"GET /helpdesk/tickets/:id":           {kind: helpdesk, params: map[string]string{"id": "ticket"}},
	"PUT /helpdesk/tickets/:id":           {kind: helpdesk, params: map[string]string{"id": "ticket"}, body: hdFields("priority", "urgent")},
	"DELETE /helpdesk/tickets/:id":        {kind: helpdesk, params: map[string]string{"id": "ticket"}},
	"GET /helpdesk/tickets/:id/comments":  {kind: helpdesk, params: map[string]string{"id": "ticket"}},
	"POST /helpdesk/tickets/:id/comments": {kind: helpdesk, params: map[string]string{"id": "ticket"}, body: hdFields("body", "Probe")},
	"GET /helpdesk/customers":             {kind: helpdesk},
	"POST /helpdesk/customers":            {kind: helpdesk, body: hdFields("name", "Probe", "email", "probe-customer@example.com")},
	"GET /helpdesk/customers/:id":         {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"PUT /helpdesk/customers/:id":         {kind: helpdesk, params: map[string]string{"id": "customer"}, body: hdFields("name", "Changed")},
	"POST /helpdesk/customers/:id/merge": {kind: helpdesk, params: map[string]string{"id": "customer"},
		body: func(a *tenant, _ string) map[string]any { return map[string]any{"from": a.ids["duplicateCustomer"]} }},
	"DELETE /helpdesk/customers/:id":           {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"GET /helpdesk/customers/:id/tickets":      {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"GET /helpdesk/customers/:id/interactions": {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"GET /helpdesk/customers/:id/activity":     {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"GET /helpdesk/customers/:id/timeline":     {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"GET /helpdesk/customers/:id/time-entries": {kind: helpdesk, params: map[string]string{"id": "customer"}},
	"POST /helpdesk/customers/:id/time-entries": {kind: helpdesk, params: map[string]string{"id": "customer"},
		body: func(a *tenant, _ string) map[string]any {
			return map[string]any{"minutes": 5, "ticketId": a.ids["ticket"]}
		}},
	"GET /helpdesk/knowledge-base/categories":        {kind: helpdesk},
	"POST /helpdesk/knowledge-base/categories":       {kind: helpdesk, body: hdFields("name", "Probe")},
	"GET /helpdesk/knowledge-base/categories/:id":    {kind: helpdesk, params: map[string]string{"id": "category"}},
	"PUT /helpdesk/knowledge-base/categories/:id":    {kind: helpdesk, params: map[string]string{"id": "category"}, body: hdFields("name", "Changed")},
	"DELETE /helpdesk/knowledge-base/categories/:id": {kind: helpdesk, params: map[string]string{"id": "category"}},
	"GET /helpdesk/knowledge-base/articles":          {kind: helpdesk},
	"POST /helpdesk/knowledge-base/articles":         {kind: helpdesk, body: hdFields("title", "Probe")},
	"GET /helpdesk/knowledge-base/articles/:id":      {kind: helpdesk, params: map[string]string{"id": "article"}},
	"PUT /helpdesk/knowledge-base/articles/:id":      {kind: helpdesk, params: map[string]string{"id": "article"}, body: hdFields("title", "Changed")},
	"DELETE /helpdesk/knowledge-base/articles/:id":   {kind: helpdesk, params: map[string]string{"id": "article"}},
	"GET /helpdesk/analytics/dashboard":              {kind: helpdesk},
	"GET /helpdesk/sla-policy":                       {kind: helpdesk},
	"GET /helpdesk/analytics/sla":                    {kind: helpdesk},
	"POST /helpdesk/sla-policy/apply":                {kind: helpdesk},
	"PUT /helpdesk/sla-policy": {kind: helpdesk, body: hdFields("businessHours", "24x7",
		"targets", map[string]any{"urgent": map[string]any{"firstResponse": 60}})},
	"GET /helpdesk/channels/email":                  {kind: helpdesk},
	"PUT /helpdesk/channels/email":                  {kind: helpdesk, body: hdFields("acknowledge", true)},
	"POST /helpdesk/channels/email/addresses":       {kind: helpdesk, body: hdFields("address", "probe-support@probe.example")},
	"DELETE /helpdesk/channels/email/addresses/:id": {kind: helpdesk, params: map[string]string{"id": "supportAddress"}},
	"POST /helpdesk/inbound/email":                  {kind: special, check: probeInboundEmail},
	"GET /helpdesk/inbound/email":                   {kind: helpdesk},
	"GET /helpdesk/inbound/email/:id":               {kind: helpdesk, params: map[string]string{"id": "inboundEmail"}},
	"POST /helpdesk/inbound/email/:id/retry":        {kind: helpdesk, params: map[string]string{"id": "inboundEmail"}},
	"GET /helpdesk/tickets/:id/attachments":         {kind: helpdesk, params: map[string]string{"id": "emailTicket"}},
	"GET /helpdesk/tickets/:id/attachments/:attachmentId": {kind: helpdesk,
		params: map[string]string{"id": "emailTicket", "attachmentId": "attachment"}},
	"GET /helpdesk/notifications": {kind: helpdesk},
	"POST /helpdesk/notifications/read": {kind: helpdesk, usersOnly: true,
		body: func(a *tenant, _ string) map[string]any { return map[string]any{"id": a.ids["notification"]} }},
	"POST /helpdesk/notifications/subscribe": {kind: helpdesk, body: func(a *tenant, _ string) map[string]any {
		return map[string]any{"endpoint": a.ids["pushEndpoint"], "keys": a.pushKeys()}
	}},

	// Payments: OWNER/ADMIN users only (keys are refused for their type).
	"POST /helpdesk/payments/create-order": {kind: helpdesk, body: hdFields("plan", "enterprise")},
	"POST /helpdesk/payments/downgrade":    {kind: helpdesk, body: hdFields("plan", "free")},
	"GET /helpdesk/payments/subscription":  {kind: helpdesk},
	"GET /helpdesk/payments/changes":       {kind: helpdesk},
	"GET /helpdesk/payments/changes/:id":   {kind: helpdesk, usersOnly: true, params: map[string]string{"id": "subscriptionChange"}},
	// AI routes (an ai_ key acts in its own organization).
	"GET /v1/ai/documents": {kind: special, check: probeAIList("/v1/ai/documents", "aiDocument")},
	"POST /v1/ai/documents": {kind: ai, body: func(a *tenant, _ string) map[string]any {
		return map[string]any{"source": "ticket", "source_id": a.ids["ticket"]}
	}},
	"GET /v1/ai/documents/:id":    {kind: ai, params: map[string]string{"id": "aiDocument"}},
	"DELETE /v1/ai/documents/:id": {kind: ai, params: map[string]string{"id": "aiDocument"}},
	"POST /v1/ai/summarize":       {kind: ai, body: aiDocumentBody},
	"POST /v1/ai/action-items":    {kind: ai, body: aiDocumentBody},
	"POST /v1/ai/analyze":         {kind: ai, body: aiDocumentBody},
	"GET /v1/ai/jobs":             {kind: special, check: probeAIList("/v1/ai/jobs", "aiJob")},
	"GET /v1/ai/jobs/:id":         {kind: ai, params: map[string]string{"id": "aiJob"}},
	"POST /v1/ai/jobs/:id/cancel": {kind: ai, params: map[string]string{"id": "aiJob"}},
	"GET /v1/ai/usage":            {kind: special, check: probeAIUsage},

	// Import and export.
	"POST /crm/imports":                                     {kind: special, check: probeImport},
	"GET /crm/imports":                                      {kind: crmData},
	"GET /crm/imports/:id":                                  {kind: crmData, params: map[string]string{"id": "crmImport"}},
	"GET /crm/imports/:id/errors":                           {kind: crmData, params: map[string]string{"id": "crmImport"}},
	"POST /crm/imports/:id/cancel":                          {kind: crmData, params: map[string]string{"id": "crmImport"}},
	"POST /crm/exports":                                     {kind: crmData, body: fields("object", "contacts")},
	"POST /crm/organization/:id/privacy/export":             {kind: crmOrg, body: hdFields("email", "ada@tenant-a.example")},
	"POST /crm/organization/:id/privacy/erase":              {kind: crmOrg, body: hdFields("email", "ada@tenant-a.example")},
	"GET /crm/organization/:id/privacy/erasures":            {kind: crmOrg},
	"GET /crm/organization/:id/privacy/erasures/:erasureId": {kind: crmOrg, params: map[string]string{"erasureId": "erasure"}},
	"GET /crm/exports":                                      {kind: crmData},
	"GET /crm/exports/:id":                                  {kind: crmData, params: map[string]string{"id": "crmExport"}},
	"GET /crm/exports/:id/file":                             {kind: crmData, params: map[string]string{"id": "crmExport"}},
	"POST /helpdesk/imports":                                {kind: special, check: probeImport},
	"GET /helpdesk/imports":                                 {kind: helpdesk},
	"GET /helpdesk/imports/:id":                             {kind: helpdesk, params: map[string]string{"id": "hdImport"}},
	"GET /helpdesk/imports/:id/errors":                      {kind: helpdesk, params: map[string]string{"id": "hdImport"}},
	"POST /helpdesk/imports/:id/cancel":                     {kind: helpdesk, params: map[string]string{"id": "hdImport"}},
	"POST /helpdesk/exports":                                {kind: helpdesk, body: hdFields("object", "customers")},
	"GET /helpdesk/exports":                                 {kind: helpdesk},
	"GET /helpdesk/exports/:id":                             {kind: helpdesk, params: map[string]string{"id": "hdExport"}},
	"GET /helpdesk/exports/:id/file":                        {kind: helpdesk, params: map[string]string{"id": "hdExport"}},

	// Special routes.
	"POST /crm/leads/webhook":      {kind: special, check: probeWebhook},
	"POST /crm/invitations/accept": {kind: special, check: probeAcceptInvitation},
}

func TestEveryTenantRouteRefusesAnotherOrganization(t *testing.T) {
	// Billing is configured (so the payments routes get as far as their
	// ids), with a Stripe address where nothing answers: no probe may reach
	// Stripe, and tenant A's change is recorded without a workflow.
	billing := apitest.WithBilling(stripeconfig.Config{SecretKey: "sk_test_tenancy", WebhookSecret: "whsec_tenancy",
		APIBase: "http://127.0.0.1:9"})
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		a, b := newTenant(t, e, "Tenant A", true), newTenant(t, e, "Tenant B", false)
		before := snapshot(t, e, a.org)

		seen := map[string]bool{}
		for _, r := range e.App.GetRoutes(true) {
			if r.Method == "HEAD" {
				continue // Fiber adds one per GET
			}
			route := r.Method + " " + r.Path
			if seen[route] {
				continue
			}
			seen[route] = true
			p, ok := tenantProbes[route]
			if !ok {
				t.Errorf("route %s is not in the tenant probe table (api/tenancy_test.go): say how another organization calls it, or why it is not tenant-scoped", route)
				continue
			}
			t.Run(route, func(t *testing.T) { p.run(t, e, route, a, b) })
		}
		for route := range tenantProbes {
			if !seen[route] {
				t.Errorf("the probe table lists %s, which is not a route any more", route)
			}
		}
		if after := snapshot(t, e, a.org); !reflect.DeepEqual(before, after) {
			for table := range before {
				if !reflect.DeepEqual(before[table], after[table]) {
					t.Errorf("another organization's calls changed %s:\nbefore %v\nafter  %v", table, before[table], after[table])
				}
			}
		}
	}, billing)
}

// run probes one route as tenant b against tenant a.
func (p probe) run(t *testing.T, e *apitest.Env, route string, a, b *tenant) {
	method, tmpl, _ := strings.Cut(route, " ")
	call := func(name string, headers map[string]string, path string, body map[string]any) {
		t.Helper()
		req := apitest.Request{Method: method, Path: path, Headers: headers}
		if body != nil {
			req.Body = body
		}
		r := e.Do(req)
		if r.Status != 404 {
			t.Errorf("%s as %s: %d, want 404: %s", path, name, r.Status, r.Body)
		}
		for kind, id := range a.ids {
			if kind != "pushEndpoint" && strings.Contains(string(r.Body), id) {
				t.Errorf("%s as %s reveals %s %s", path, name, kind, id)
			}
		}
	}
	fill := func(orgID string) string {
		path := tmpl
		for param, kind := range p.params {
			path = strings.Replace(path, ":"+param, a.ids[kind], 1)
		}
		return strings.Replace(path, ":id", orgID, 1) // crmOrg: the organization
	}
	body := func(orgID string) map[string]any {
		if p.body == nil || method == "GET" || method == "DELETE" {
			return nil
		}
		return p.body(a, orgID)
	}
	query := func(path, orgID string) string {
		if method == "GET" || method == "DELETE" || p.body == nil {
			return path + "?orgId=" + orgID
		}
		return path
	}
	switch p.kind {
	case notTenant:
		if p.reason == "" {
			t.Fatalf("%s is marked not tenant-scoped without a reason", route)
		}
		t.Skip(p.reason)
	case crmData:
		// Naming the other organization, with a user token and a key.
		call("B's user naming A", b.owner.Auth(), query(fill(a.org), a.org), body(a.org))
		call("B's crm key naming A", apitest.Bearer(b.crmKey), query(fill(a.org), a.org), body(a.org))
		if len(p.params) > 0 {
			// In its own organization, with A's ids.
			call("B's user in B with A's ids", b.owner.Auth(), query(fill(b.org), b.org), body(b.org))
			call("B's crm key with A's ids", apitest.Bearer(b.crmKey), fill(b.org), body(""))
		}
	case crmOrg:
		call("B's user on A", b.owner.Auth(), fill(a.org), body(""))
		call("B's crm key on A", apitest.Bearer(b.crmKey), fill(a.org), body(""))
		if len(p.params) > 0 {
			call("B's user on B with A's ids", b.owner.Auth(), fill(b.org), body(""))
		}
	case helpdesk:
		call("B's hd key in workspace A", apitest.HelpdeskKey(b.hdKey, a.org), fill(""), body(""))
		call("B's user in workspace A", apitest.HelpdeskUser(b.owner.Token, a.org), fill(""), body(""))
		if len(p.params) > 0 || p.usersOnly {
			if !p.usersOnly {
				call("B's hd key in B with A's ids", apitest.HelpdeskKey(b.hdKey, b.org), fill(""), body(""))
			}
			call("B's user in B with A's ids", apitest.HelpdeskUser(b.owner.Token, b.org), fill(""), body(""))
		}
	case ai:
		call("B's ai key with A's ids", apitest.Bearer(b.aiKey), fill(""), body(""))
	case special:
		p.check(t, e, a, b)
	}
}

func aiDocumentBody(a *tenant, _ string) map[string]any {
	return map[string]any{"document_id": a.ids["aiDocument"]}
}

// probeAIList: B's ai key lists B's own rows, never A's.
func probeAIList(path, kind string) func(t *testing.T, e *apitest.Env, a, b *tenant) {
	return func(t *testing.T, e *apitest.Env, a, b *tenant) {
		r := e.Do(apitest.Request{Method: "GET", Path: path, Headers: apitest.Bearer(b.aiKey)}).Expect(200)
		if strings.Contains(string(r.Body), a.ids[kind]) {
			t.Errorf("B's %s shows A's %s: %s", path, kind, r.Body)
		}
		if !strings.Contains(string(e.Do(apitest.Request{Method: "GET", Path: path, Headers: apitest.Bearer(a.aiKey)}).Expect(200).Body), a.ids[kind]) {
			t.Errorf("A's own %s lacks its %s", path, kind)
		}
	}
}

// probeAIUsage: B's ai key sees B's usage (none), not A's.
func probeAIUsage(t *testing.T, e *apitest.Env, a, b *tenant) {
	var ua, ub struct {
		TotalTokens int64 `json:"total_tokens"`
	}
	e.Do(apitest.Request{Method: "GET", Path: "/v1/ai/usage", Headers: apitest.Bearer(a.aiKey)}).Expect(200).JSON(&ua)
	e.Do(apitest.Request{Method: "GET", Path: "/v1/ai/usage", Headers: apitest.Bearer(b.aiKey)}).Expect(200).JSON(&ub)
	if ua.TotalTokens == 0 || ub.TotalTokens != 0 {
		t.Errorf("usage: A %d tokens, B %d (B has run nothing)", ua.TotalTokens, ub.TotalTokens)
	}
}

// probeWebhook: B's crm key naming A's organization is a 404, and B's key
// never reaches A's leads.
func probeWebhook(t *testing.T, e *apitest.Env, a, b *tenant) {
	e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": b.crmKey},
		Body: map[string]any{"orgId": a.org, "name": "Probe", "email": "lead@tenant-a.example"}}).ExpectProblem(404, "not_found")
}

// probeImport: B's credentials naming A cannot import into it (a
// multipart body, which the generic probes do not send).
func probeImport(t *testing.T, e *apitest.Env, a, b *tenant) {
	file := []byte("name,email\nProbe,probe@tenant-b.example\n")
	e.Upload("/crm/imports?orgId="+a.org, b.owner.Auth(), "p.csv", file, "object", "contacts").ExpectProblem(404, "not_found")
	e.Upload("/crm/imports?orgId="+a.org, apitest.Bearer(b.crmKey), "p.csv", file, "object", "contacts").ExpectProblem(404, "not_found")
	e.Upload("/helpdesk/imports", apitest.HelpdeskKey(b.hdKey, a.org), "p.csv", file, "object", "customers").ExpectProblem(404, "not_found")
	e.Upload("/helpdesk/imports", apitest.HelpdeskUser(b.owner.Token, a.org), "p.csv", file, "object", "customers").ExpectProblem(404, "not_found")
}

// probeInboundEmail: B's hd key naming workspace A cannot post mail into
// it.
func probeInboundEmail(t *testing.T, e *apitest.Env, a, b *tenant) {
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: inboundMessage("probe@tenant-b.example", a.org),
		Headers: map[string]string{"X-Api-Key": b.hdKey, "X-Workspace-Id": a.org, "Content-Type": "message/rfc822"}}).ExpectProblem(404, "not_found")
}

// inboundMessage is a message with a file, from sender to workspace org.
func inboundMessage(sender, org string) []byte {
	return []byte("From: " + sender + "\r\nTo: " + models.WorkspaceAddress(org, apitest.MailDomain) + "\r\nSubject: Invoice\r\n" +
		"Message-ID: <" + models.NewID() + "@tenant.example>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"M\"\r\n\r\n" +
		"--M\r\nContent-Type: text/plain\r\n\r\nThe invoice.\r\n--M\r\nContent-Type: application/pdf\r\n" +
		"Content-Disposition: attachment; filename=\"invoice.pdf\"\r\n\r\n%PDF-1.4\r\n--M--\r\n")
}

// probeAcceptInvitation: A's invitation token in B's hands is refused
// without telling anything about it (and makes no member).
func probeAcceptInvitation(t *testing.T, e *apitest.Env, a, b *tenant) {
	p := e.Accept(b.owner, a.invitationToken).ExpectProblem(403, "invitation_email_mismatch")
	if strings.Contains(string(mustJSON(p)), a.invitedEmail) || strings.Contains(string(mustJSON(p)), a.org) {
		t.Errorf("the refusal reveals the invitation: %v", p)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// newTenant creates an organization with one of everything (withData) and
// its credentials.
func newTenant(t *testing.T, e *apitest.Env, name string, withData bool) *tenant {
	t.Helper()
	tn := &tenant{owner: e.SignUp(apitest.UniqueEmail("owner")), ids: map[string]string{}}
	tn.org = e.CreateOrg(tn.owner, name)
	e.SetPlan(tn.org, models.PlanBusiness)
	tn.crmKey, tn.hdKey, tn.aiKey = e.CreateKey(tn.owner, tn.org, "crm"), e.CreateKey(tn.owner, tn.org, "helpdesk"), e.CreateKey(tn.owner, tn.org, "ai")
	if !withData {
		return tn
	}
	crm := apitest.Bearer(tn.crmKey)
	hd := apitest.HelpdeskKey(tn.hdKey, tn.org)
	create := func(kind, path string, headers map[string]string, body map[string]any) {
		t.Helper()
		var out struct{ ID string }
		e.Do(apitest.Request{Method: "POST", Path: path, Headers: headers, Body: body}).Expect(201).JSON(&out)
		tn.ids[kind] = out.ID
	}
	create("contact", "/crm/contacts", crm, map[string]any{"name": "Ada", "email": "ada@tenant-a.example"})
	create("duplicateContact", "/crm/contacts", crm, map[string]any{"name": "Ada L.", "email": "ada@tenant-a.example"})
	create("duplicateCustomer", "/helpdesk/customers", hd, map[string]any{"name": "Bob M.", "email": "bob.m@tenant-a.example"})
	create("deal", "/crm/deals", crm, map[string]any{"title": "Engines", "amount": 5000})
	create("lead", "/crm/leads", crm, map[string]any{"name": "Grace", "email": "grace@tenant-a.example", "phone": "+1 415 555 2671"})
	create("task", "/crm/tasks", crm, map[string]any{"title": "Call Grace"})
	create("ticket", "/helpdesk/tickets", hd, map[string]any{"subject": "Printer", "email": "bob@tenant-a.example"})
	create("category", "/helpdesk/knowledge-base/categories", hd, map[string]any{"name": "Guides"})
	create("article", "/helpdesk/knowledge-base/articles", hd, map[string]any{"title": "Reset", "status": "published"})
	var ticket struct{ CustomerID string }
	e.Do(apitest.Request{Method: "GET", Path: "/helpdesk/tickets/" + tn.ids["ticket"], Headers: hd}).Expect(200).JSON(&ticket)
	tn.ids["customer"] = ticket.CustomerID
	var intake struct{ IntakeID string }
	e.Do(apitest.Request{Method: "POST", Path: "/crm/leads/webhook", Headers: map[string]string{"X-Api-Key": tn.crmKey},
		Body: map[string]any{"name": "Form", "email": "form@tenant-a.example"}}).Expect(202).JSON(&intake)
	tn.ids["intake"] = intake.IntakeID
	var keys struct{ Data []struct{ ID string } }
	e.Do(apitest.Request{Method: "GET", Path: "/crm/organization/" + tn.org + "/apikeys", Headers: tn.owner.Auth()}).Expect(200).JSON(&keys)
	tn.ids["apiKey"] = keys.Data[0].ID
	agent := e.AddMember(tn.owner, tn.org, models.RoleAgent)
	var m models.Member
	if err := e.DB.Take(&m, "org_id = ? AND user_id = ?", tn.org, agent.ID).Error; err != nil {
		t.Fatal(err)
	}
	tn.ids["member"] = m.ID
	tn.invitedEmail = apitest.UniqueEmail("invited")
	inv := e.Invite(tn.owner, tn.org, tn.invitedEmail, models.RoleAgent)
	tn.ids["invitedMember"], tn.invitationToken = inv.MemberID, inv.Token
	// A notification and a push subscription of the owner.
	var owner models.Member
	if err := e.DB.Take(&owner, "org_id = ? AND user_id = ?", tn.org, tn.owner.ID).Error; err != nil {
		t.Fatal(err)
	}
	n := models.Notification{ID: models.NewID(), OrgID: tn.org, MemberID: owner.ID, Type: "ticket_assigned", Title: "Yours",
		Body: "A ticket", CreatedAt: models.Now()}
	if err := e.DB.Create(&n).Error; err != nil {
		t.Fatal(err)
	}
	tn.ids["notification"] = n.ID
	// A subscription change of the workspace (failed, so nothing runs).
	change := models.SubscriptionChange{ID: models.NewID(), OrgID: tn.org, Kind: models.ChangeCreate, FromPlan: models.PlanBusiness,
		ToPlan: models.PlanEnterprise, Interval: models.IntervalMonth, Status: models.ChangeFailed, Step: models.StepSubscription, Attempts: 1,
		LastErrorCode: "card_declined", CreatedAt: models.Now(), UpdatedAt: models.Now()}
	if err := e.DB.Create(&change).Error; err != nil {
		t.Fatal(err)
	}
	tn.ids["subscriptionChange"] = change.ID
	tn.ids["pushEndpoint"] = "https://push.example.com/" + models.NewID()
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/notifications/subscribe", Headers: apitest.HelpdeskUser(tn.owner.Token, tn.org),
		Body: map[string]any{"endpoint": tn.ids["pushEndpoint"], "keys": tn.pushKeys()}}).Expect(201)
	// An AI document and a finished job.
	var doc, job struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/v1/ai/documents", Headers: apitest.Bearer(tn.aiKey),
		Body: map[string]any{"content": "Bob reports the printer jams. Please order a new drum by Friday."}}).Expect(201).JSON(&doc)
	tn.ids["aiDocument"] = doc.ID
	e.Do(apitest.Request{Method: "POST", Path: "/v1/ai/action-items", Headers: map[string]string{"Authorization": "Bearer " + tn.aiKey, "Prefer": "wait=25"},
		Body: map[string]any{"document_id": doc.ID}}).Expect(200).JSON(&job)
	tn.ids["aiJob"] = job.ID
	// The e-mail channel: a support address, and a message with a file.
	var addr, in struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/channels/email/addresses", Headers: hd,
		Body: map[string]any{"address": apitest.UniqueEmail("support")}}).Expect(201).JSON(&addr)
	tn.ids["supportAddress"] = addr.ID
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/inbound/email", Body: inboundMessage("mail@tenant-a.example", tn.org),
		Headers: map[string]string{"X-Api-Key": tn.hdKey, "X-Workspace-Id": tn.org, "Content-Type": "message/rfc822"}}).Expect(202).JSON(&in)
	tn.ids["inboundEmail"] = in.ID
	var file models.TicketAttachment
	e.Eventually(func() bool { return e.DB.Take(&file, "org_id = ?", tn.org).Error == nil }, "the inbound message's file")
	tn.ids["emailTicket"], tn.ids["attachment"] = file.TicketID, file.ID
	// A webhook endpoint, disabled (its delivery stays pending, so nothing
	// moves in the background), with a delivery.
	var hook, test struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + tn.org + "/webhooks", Headers: tn.owner.Auth(),
		Body: map[string]any{"url": "https://93.184.216.34/hooks", "events": []string{"deal.*"}}}).Expect(201).JSON(&hook)
	e.Do(apitest.Request{Method: "PUT", Path: "/crm/organization/" + tn.org + "/webhooks/" + hook.ID, Headers: tn.owner.Auth(),
		Body: map[string]any{"status": "disabled"}}).Expect(200)
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + tn.org + "/webhooks/" + hook.ID + "/test", Headers: tn.owner.Auth()}).
		Expect(202).JSON(&test)
	tn.ids["webhook"], tn.ids["webhookDelivery"] = hook.ID, test.ID
	// An automation rule with a run waiting in its day-long delay.
	var rule struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + tn.org + "/automations", Headers: tn.owner.Auth(),
		Body: probeRule(tn, "")}).Expect(201).JSON(&rule)
	var waiting struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/helpdesk/tickets", Headers: hd,
		Body: map[string]any{"subject": "Automated", "email": "auto@tenant-a.example", "tags": []string{"auto-probe"}}}).Expect(201).JSON(&waiting)
	var run models.AutomationRun
	e.Eventually(func() bool {
		return e.DB.Take(&run, "org_id = ? AND object_id = ? AND status = ?", tn.org, waiting.ID, models.RunWaiting).Error == nil
	}, "tenant %s's automation run to wait", name)
	tn.ids["automation"], tn.ids["automationRun"] = rule.ID, run.ID
	// A custom field of contacts, with a value.
	var field struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + tn.org + "/fields", Headers: tn.owner.Auth(),
		Body: map[string]any{"object": "contact", "key": "plan", "label": "Plan", "type": "text"}}).Expect(201).JSON(&field)
	tn.ids["field"] = field.ID
	// A finished import and export in each app.
	transfer := func(kind, path string, headers map[string]string) {
		var out struct{ ID, State string }
		if strings.HasSuffix(path, "imports") {
			object := map[bool]string{true: "contacts", false: "customers"}[strings.HasPrefix(path, "/crm")]
			e.Upload(path+"?orgId="+tn.org, headers, "people.csv", []byte("name,email\nLin,lin@tenant-a.example\nBad,bad\n"), "object", object).
				Expect(202).JSON(&out)
		} else {
			object := map[bool]string{true: "contacts", false: "customers"}[strings.HasPrefix(path, "/crm")]
			e.Do(apitest.Request{Method: "POST", Path: path + "?orgId=" + tn.org, Headers: headers, Body: map[string]any{"object": object}}).
				Expect(202).JSON(&out)
		}
		e.Eventually(func() bool {
			e.Do(apitest.Request{Method: "GET", Path: path + "/" + out.ID + "?orgId=" + tn.org, Headers: headers}).Expect(200).JSON(&out)
			return out.State == models.ImportDone
		}, "tenant %s's %s", name, path)
		tn.ids[kind] = out.ID
	}
	// An erasure asked for, not confirmed (nothing is erased).
	var erasure struct{ ID string }
	e.Do(apitest.Request{Method: "POST", Path: "/crm/organization/" + tn.org + "/privacy/erase", Headers: tn.owner.Auth(),
		Body: map[string]any{"email": "gone@tenant-a.example"}}).Expect(201).JSON(&erasure)
	tn.ids["erasure"] = erasure.ID
	transfer("crmImport", "/crm/imports", tn.owner.Auth())
	transfer("crmExport", "/crm/exports", tn.owner.Auth())
	transfer("hdImport", "/helpdesk/imports", hd)
	transfer("hdExport", "/helpdesk/exports", hd)
	// Let the background work settle (intake processed, e-mails sent), so
	// the snapshot below only changes if a probe changes something.
	e.Eventually(func() bool {
		var pending int64
		e.DB.Model(&models.LeadIntake{}).Where("org_id = ? AND status <> ?", tn.org, models.IntakeProcessed).Count(&pending)
		var queued int64
		e.DB.Model(&models.Invitation{}).Where("org_id = ? AND status = ? AND email_status = ?", tn.org, models.InvitationPending,
			models.InviteEmailQueued).Count(&queued)
		return pending == 0 && queued == 0
	}, "tenant %s's background work", name)
	return tn
}

func (tn *tenant) pushKeys() map[string]string {
	k, _ := ecdh.P256().GenerateKey(rand.Reader)
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	return map[string]string{"p256dh": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes()),
		"auth": base64.RawURLEncoding.EncodeToString(secret)}
}

// snapshot reads every row of the organization's tables.
func snapshot(t *testing.T, e *apitest.Env, orgID string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	tables := []string{"contacts", "deals", "leads", "lead_activities", "lead_intakes", "tasks", "members", "api_keys", "invitations",
		"tickets", "ticket_comments", "customers", "customer_events", "time_entries", "kb_categories", "kb_articles",
		"notifications", "push_subscriptions", "subscription_changes", "subscription_change_retries",
		"ai_documents", "ai_jobs", "email_channels", "email_addresses", "inbound_emails", "email_messages", "ticket_attachments",
		"webhook_endpoints", "webhook_events", "webhook_deliveries", "automations", "automation_runs", "custom_fields", "person_merges",
		"imports", "exports", "erasures"}
	for _, table := range tables {
		var rows []map[string]any
		order := map[string]string{"email_messages": "message_id", "email_channels": "org_id"}[table]
		if err := e.DB.Table(table).Where("org_id = ?", orgID).Order(cmp.Or(order, "id")).Find(&rows).Error; err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for _, r := range rows {
			delete(r, "last_used_at") // A's own keys' use, not B's
			for k, v := range r {
				if tm, ok := v.(time.Time); ok {
					r[k] = tm.UTC().Format(time.RFC3339Nano)
				}
			}
		}
		out[table] = rows
	}
	var orgs []map[string]any
	e.DB.Table("organizations").Where("id = ?", orgID).Find(&orgs)
	out["organizations"] = orgs
	return out
}
