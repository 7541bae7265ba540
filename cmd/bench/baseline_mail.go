package main

import "fmt"

// mailOwnLoad is the SMTP listener beside pgbench running the statements
// it sends PostgreSQL for one accepted message (mailLoad's baseline is the
// one INSERT of the raw message).
const mailOwnLoad = "SMTP inbound message, 1 KB (250) beside its own statements"

// mailOwn is the inbound message beside the listener's three statements
// for it, in its order, as read in api/mailin and checked in PostgreSQL's
// log. They are three statements, not a transaction: the listener sends
// each on the pool. What follows the 250 (the relay starting EmailIngest,
// the ingest's transaction) is the pipeline's, which the bench lets drain
// between rounds (bencher.settle), and is not in either side.
var mailOwn = workload{
	drive:       inboundMail.drive,
	queues:      inboundMail.queues,
	pgbenchMode: "prepared",
	pgLatency:   true,
	pgScript: func(b *bencher) string {
		_, raw := mailMessage(0, b.mailbox)
		window := `date_trunc('minute', now())`
		return fmt.Sprintf(`\set n random(1, 1000000000000)
-- session.Rcpt → models.ResolveMailbox: the workspace's own address names
-- its organization, which must be active.
SELECT count(*) FROM organizations WHERE id = :org AND status = 'active';
-- session.Data → tooFast → models.HitRates: the client's and the sender's
-- counts in one upsert (the client's row is one hot row, as 127.0.0.1's is).
INSERT INTO rate_counters (bucket, window_start, hits, expires_at) VALUES
  ('smtp-client|pgbench', %[1]s, 1, %[1]s + interval '2 minutes'),
  ('smtp-from|pgbench-' || CAST(:n AS text) || '@example.com', %[1]s, 1, %[1]s + interval '2 minutes')
ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_counters.hits + excluded.hits
RETURNING bucket, hits, COALESCE((SELECT p.hits FROM rate_counters p WHERE p.bucket = rate_counters.bucket AND p.window_start = %[1]s - interval '1 minute'), 0);
-- storeAll → outbox.Starter.RecordWithStart → models.RecordWithStart: the
-- raw message and its EmailIngest start as one statement. Status 'bench'
-- and a start due at 'infinity' keep the pipeline and the relay off the
-- baseline's rows (the start still enters the outbox's partial indexes).
WITH recorded AS (INSERT INTO inbound_emails (id, org_id, message_id, mail_from, rcpt, via, raw, size, status, reason, received_at)
  VALUES (gen_random_uuid(), :org, 'pgbench-' || CAST(gen_random_uuid() AS text) || '@example.com', 'pgbench-' || CAST(:n AS text) || '@example.com', '%[2]s', 'smtp',
    convert_to(repeat('x', %[3]d), 'UTF8'), %[3]d, 'bench', '', now())
  ON CONFLICT (org_id, message_id) DO NOTHING RETURNING id),
started AS (INSERT INTO workflow_starts (id, workflow_id, workflow_type, task_queue, input, org_id, kind, status, attempts, next_attempt_at, last_error, run_id, started_at, created_at, updated_at, signal_name, signal_input, trace_context, request_id)
  SELECT gen_random_uuid(), 'email-ingest/%[4]s/' || recorded.id, 'EmailIngest', 'suite', '{"inboundId":"' || recorded.id || '","orgId":"%[4]s"}', :org, 'email-ingest', 'pending', 0, 'infinity', '', '', NULL, now(), now(), '', '', '', '' FROM recorded RETURNING 1)
SELECT recorded.* FROM recorded, started;
`, window, b.mailbox, len(raw), b.org)
	},
}
