// Package workflows holds the suite's Temporal workflow definitions:
// deterministic code only. Side effects (database, identity service, Stripe,
// OpenAI, web push) happen in activities; this package never imports gorm,
// stripe, openai or net/http. Package names (workflows/names/names.go) is
// the one place for task queue,
// workflow types, workflow-ID builders and search attributes.
package workflows
