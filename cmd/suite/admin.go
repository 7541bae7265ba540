package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

const adminUsage = `Usage: suite admin <task> [arguments]

Tasks (for self-hosting operators; no Stripe needed):
  set-plan <orgId> <plan>                 move an organization to free, starter, business or enterprise
  create-key <orgId> <service> [name]     create an API key for crm, helpdesk or ai and print it once

Billing staff (identity users who may use the operator API /ops/v1):
  grant-staff <email>                     make a signed-up user billing staff (with their next token)
  revoke-staff <email>                    take it back

Billing (Stripe; retry needs STRIPE_SECRET_KEY):
  billing list [--status S] [--org ID] [--limit N]
                                          list subscription changes, newest first (e.g. --status failed)
  billing retry <changeId>                re-run a failed change from the step that failed
`

// runAdmin is `suite admin`: operator tasks against the configured database.
func runAdmin(ctx context.Context, cfg Config, args []string) error {
	if len(args) == 0 {
		return usageError(adminUsage)
	}
	db, err := openDB(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	if err := requireCurrentSchema(ctx, db); err != nil {
		return err
	}
	switch args[0] {
	case "set-plan":
		if len(args) != 3 {
			return usageError(adminUsage)
		}
		if err := models.SetOrgPlan(ctx, db, args[1], args[2]); err != nil {
			return adminError(err, args[1])
		}
		fmt.Fprintf(stdout, "organization %s is now on the %s plan\n", args[1], args[2])
		return nil
	case "create-key":
		if len(args) < 3 || len(args) > 4 {
			return usageError(adminUsage)
		}
		name := "created by suite admin"
		if len(args) == 4 {
			name = args[3]
		}
		k, secret, err := models.CreateAPIKey(ctx, db, args[1], args[2], name, "suite-admin")
		if err != nil {
			return adminError(err, args[1])
		}
		fmt.Fprintf(stdout, "%s\n", secret)
		fmt.Fprintf(stdout, "# key %s (%s) for organization %s — shown once, store it now\n", k.ID, k.Service, k.OrgID)
		return nil
	case "grant-staff", "revoke-staff":
		return setStaff(ctx, db, args, args[0] == "grant-staff")
	case "billing":
		return runAdminBilling(ctx, cfg, db, args)
	}
	return usageError("unknown admin task " + fmt.Sprintf("%q", args[0]) + "\n\n" + adminUsage)
}

func adminError(err error, orgID string) error {
	var de *models.DomainError
	switch {
	case errors.Is(err, models.ErrNotFound):
		return fmt.Errorf("no organization %s", orgID)
	case errors.As(err, &de) && len(de.Fields) > 0:
		return errors.New(de.Fields[0].Message)
	}
	return err
}
