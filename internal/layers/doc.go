// Package layers holds no code, only a test: imports in the suite flow one
// way, cmd → api and worker → workflows → activities → models, with api and
// worker as siblings that never import each other and platform code both of
// them need (telemetry, readiness, the egress guard, the identity-service
// client, the Stripe configuration) in internal/. The test parses the
// imports of every production Go file of the module and fails, naming the
// file and the import, when one points the wrong way — so a layer cannot
// start depending on the one above it without the rule being changed here
// on purpose. Test files may import anything: tests wire whole processes.
package layers
