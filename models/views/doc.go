// Package views holds the JSON the API answers for the objects whose
// changes are also told outside a request: a webhook event's data.object
// is the object as the API shows it, whether the change came through the
// API (api/...) or from a workflow's activity (activities) — lead intake,
// e-mail ingest — so both layers build it here, from models alone.
//
// It sits above models, though its path is below: models must not import
// it (nor may workflows or the worker), and it reads nothing itself — the
// caller reads the rows (models.EmailsSentForComments, say) and a view is
// a pure function of them. internal/layers checks both.
package views
