-- Ticket numbers come from a sequence per organization (models.OpenTicket):
-- a sequence hands out numbers without a lock, so the creations in one
-- workspace no longer wait for each other's commit on the counter row (373
-- creations a second at 16 connections before, all of them queued on that
-- row). A creation that rolls back leaves a gap in the numbers.
--
-- next_ticket_number creates the organization's sequence on its first
-- ticket, starting past every number it has used: the counter row's (the
-- numbering before this migration) and its tickets'. Two first tickets at
-- once: one creates it, the other's CREATE waits on the catalog's unique
-- index and then finds it made. ticket_counters stays, for the monthly
-- allowance of the limited plans and as SQLite's numbering.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION next_ticket_number(org uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    seq text := 'ticket_numbers_' || replace(org::text, '-', '');
BEGIN
    IF to_regclass(seq) IS NULL THEN
        BEGIN
            EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I AS integer START %s', seq, GREATEST(
                (SELECT last_number FROM ticket_counters WHERE org_id = org),
                (SELECT max(number) FROM tickets WHERE org_id = org),
                1000) + 1);
        EXCEPTION WHEN unique_violation OR duplicate_table THEN
            NULL; -- created by a concurrent first ticket
        END;
    END IF;
    RETURN nextval(seq);
END $$;
-- +goose StatementEnd

-- +goose Down
-- Back to numbering on the counter row (an earlier release): each
-- workspace's row continues past the highest number its tickets have, and
-- the sequences go.
INSERT INTO ticket_counters (org_id, last_number, month, month_count, updated_at)
    SELECT org_id, max(number), '', 0, now() FROM tickets GROUP BY org_id
    ON CONFLICT (org_id) DO UPDATE SET last_number = GREATEST(ticket_counters.last_number, excluded.last_number);
-- +goose StatementBegin
DO $$
DECLARE seq record;
BEGIN
    FOR seq IN SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema() AND sequencename LIKE 'ticket\_numbers\_%' LOOP
        EXECUTE format('DROP SEQUENCE %I', seq.sequencename);
    END LOOP;
END $$;
-- +goose StatementEnd
DROP FUNCTION next_ticket_number(uuid);
