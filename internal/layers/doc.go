// Package layers holds no code, only a test: imports in the suite flow one
// way, cmd → api and worker → workflows → activities → models, with api and
// worker as siblings that never import each other. models/views, below
// models by path, is the layer above it: the objects as the API shows them
// (a webhook event's data.object too), built from models by api and
// activities alike; models must not import it, nor may workflows or the
// worker, and it reads nothing through gorm itself. models/record, the
// recording of the work a change sets off (workflow starts, signals,
// events, notifications) in the change's transaction, is likewise above
// models and below the API and activities, which both record through it.
// It names the workflows it wakes through workflows/names, the one leaf of
// a layer above that every layer may import: names only, importing
// nothing of the suite (package workflows itself imports activities, so
// the names cannot live there).
//
// internal/ is platform code below every layer — models included, since
// models imports internal/database — so it imports none of the suite's
// layers, not even models: telemetry, readiness, the egress guard, the
// identity-service client, the Stripe configuration, the database
// connection, and internal/sla. internal/sla is the business-hours and
// due-time arithmetic of service-level targets: pure, it imports the
// standard library alone (no models, no clock, no I/O) and is tested on
// its own; models builds a policy's Calendar from it and computes both the
// due times a ticket shows and the timers its SLA workflow waits for
// (models.SLATimers, through an activity). It is below models, not in it,
// because it knows nothing of tickets or policies. Only internal/database
// and internal/ready hold a *gorm.DB; no internal package knows a table.
//
// The test parses the imports of every production Go file of the module
// and fails, naming the file and the import, when one points the wrong way
// — so a layer cannot start depending on the one above it without the rule
// being changed here on purpose. Test files may import anything: tests wire
// whole processes.
package layers
