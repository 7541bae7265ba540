// Package web holds what every HTTP interface of the suite shares: the
// problem+json error handler and its status table, strict JSON decoding with
// validation, cursor pagination, idempotency keys, rate limits, request ids,
// access logs and metrics, and links into the Temporal Web UI (AI jobs and
// the console point operators at their workflows). Interface packages (crm,
// helpdesk, ai, identity) import it; it imports none of them.
package web
