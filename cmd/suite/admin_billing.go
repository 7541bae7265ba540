package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"gorm.io/gorm"

	"github.com/business-suite/suite/api/billing"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/workflows/names"
)

// shellRequester is who a retry from the shell is recorded as.
const shellRequester = "suite-admin"

// setStaff is `suite admin grant-staff|revoke-staff <email>`.
func setStaff(ctx context.Context, db *gorm.DB, args []string, staff bool) error {
	if len(args) != 2 {
		return usageError(adminUsage)
	}
	u, err := models.SetUserStaff(ctx, db, args[1], staff)
	if errors.Is(err, models.ErrNotFound) {
		return fmt.Errorf("no user with the e-mail address %s (they sign up first)", args[1])
	}
	if err != nil {
		return err
	}
	if staff {
		fmt.Fprintf(stdout, "%s (%s) is now billing staff; their next access token carries the staff claim\n", u.Email, u.ID)
	} else {
		fmt.Fprintf(stdout, "%s (%s) is no longer billing staff (tokens already issued stay valid until they expire, at most 15 minutes)\n", u.Email, u.ID)
	}
	return nil
}

// runAdminBilling is `suite admin billing list|retry`.
func runAdminBilling(ctx context.Context, cfg Config, db *gorm.DB, args []string) error {
	if len(args) < 2 {
		return usageError(adminUsage)
	}
	switch args[1] {
	case "list":
		return billingList(ctx, db, args[2:])
	case "retry":
		if len(args) != 3 {
			return usageError(adminUsage)
		}
		return billingRetry(ctx, cfg, db, args[2])
	}
	return usageError(fmt.Sprintf("unknown billing task %q\n\n%s", args[1], adminUsage))
}

func billingList(ctx context.Context, db *gorm.DB, args []string) error {
	fs := flag.NewFlagSet("suite admin billing list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	status := fs.String("status", "", "only changes in this state (e.g. failed)")
	org := fs.String("org", "", "only this organization's changes")
	limit := fs.Int("limit", 50, "at most this many changes, newest first")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *limit < 1 {
		return usageError(adminUsage)
	}
	f := models.ChangeFilter{OrgID: *org, Status: *status}
	if err := f.Validate(); err != nil {
		return adminError(err, *org)
	}
	page, err := web.Paginate(models.SubscriptionChanges(db.WithContext(ctx), f), web.PageRequest{Limit: *limit},
		func(c *models.SubscriptionChange) web.Cursor { return web.Cursor{CreatedAt: c.CreatedAt, ID: c.ID} })
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHANGE\tORGANIZATION\tKIND\tPLAN\tSTATUS\tSTEP\tATTEMPTS\tERROR\tCREATED")
	for _, c := range page.Data {
		errText := "-"
		if c.LastErrorCode != "" {
			errText = c.LastErrorCode
		}
		step := c.Step
		if step == "" {
			step = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s→%s\t%s\t%s\t%d\t%s\t%s\n", c.ID, c.OrgID, c.Kind, c.FromPlan, c.ToPlan, c.Status, step,
			c.Attempts, errText, c.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if page.HasMore {
		fmt.Fprintf(stdout, "# more than %d; narrow with --status/--org or raise --limit\n", *limit)
	}
	return nil
}

// billingRetry records the retry and its workflow start in one transaction
// (as the operator API does); the outbox relay of the running API
// processes starts the run within a poll interval, even if Temporal is
// unreachable from this shell.
func billingRetry(ctx context.Context, cfg Config, db *gorm.DB, changeID string) error {
	svc := &billing.Service{DB: db, Starter: outbox.New(db, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil), Config: cfg.Billing()}
	var change *models.SubscriptionChange
	var retry *models.SubscriptionChangeRetry
	// A refusal commits too: its audit entry stays (billing.RetryAudited).
	var refused error
	err := svc.Starter.Transact(ctx, func(tx *record.Tx) (err error) {
		change, retry, err = svc.RetryAudited(tx, changeID, models.StaffAuditEntry{Actor: shellRequester, Channel: models.StaffViaShell})
		if billing.IsRefusal(err) {
			refused, err = err, nil
		}
		return err
	})
	if err == nil {
		err = refused
	}
	var de *models.DomainError
	switch {
	case errors.Is(err, models.ErrNotFound):
		return fmt.Errorf("no subscription change %s", changeID)
	case errors.As(err, &de):
		msg := de.Message
		if len(de.Fields) > 0 {
			msg = de.Fields[0].Message
		}
		if de.Code == "billing_not_configured" {
			msg = "billing is not configured: set STRIPE_SECRET_KEY (and the rest of STRIPE_*) as for the API and workers"
		}
		return fmt.Errorf("%s: %s", de.Code, strings.TrimSuffix(msg, "."))
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "retry %d of change %s recorded (from step %s); workflow %s starts through the outbox\n",
		retry.Number, change.ID, retry.FromStep, names.SubscriptionChangeID(change.OrgID, change.ID, change.Retry()))
	return nil
}
