-- Billing staff are identity users with a staff flag (not workspace
-- members): their access tokens carry a `staff` claim that opens the
-- operator API (/ops/v1). Granted with `suite admin grant-staff <email>`.

-- +goose Up
ALTER TABLE identity_users ADD COLUMN staff boolean NOT NULL DEFAULT 0;
