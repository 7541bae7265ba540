-- One encoding of "who did this" in every table (models.Actor): a member
-- is "member:<member id>". The CRM tables stored a member as the bare id
-- (the Helpdesk's customer_events already used the prefix); API keys
-- ("key:<id>") and the intake workflow ("intake") were already encoded.
-- What the CRM interface shows is unchanged (api/crm shownActor).

-- +goose Up
UPDATE contacts           SET created_by = 'member:' || created_by WHERE created_by <> '' AND created_by <> 'intake' AND created_by NOT LIKE 'key:%' AND created_by NOT LIKE 'member:%';
UPDATE leads              SET created_by = 'member:' || created_by WHERE created_by <> '' AND created_by <> 'intake' AND created_by NOT LIKE 'key:%' AND created_by NOT LIKE 'member:%';
UPDATE lead_activities    SET created_by = 'member:' || created_by WHERE created_by <> '' AND created_by <> 'intake' AND created_by NOT LIKE 'key:%' AND created_by NOT LIKE 'member:%';
UPDATE deals              SET created_by = 'member:' || created_by WHERE created_by <> '' AND created_by <> 'intake' AND created_by NOT LIKE 'key:%' AND created_by NOT LIKE 'member:%';
UPDATE deal_stage_changes SET changed_by = 'member:' || changed_by WHERE changed_by <> '' AND changed_by <> 'intake' AND changed_by NOT LIKE 'key:%' AND changed_by NOT LIKE 'member:%';
UPDATE tasks              SET created_by = 'member:' || created_by WHERE created_by <> '' AND created_by <> 'intake' AND created_by NOT LIKE 'key:%' AND created_by NOT LIKE 'member:%';
