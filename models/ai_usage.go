package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// AIUsage is the tokens an organization spent in one calendar month
// (YYYY-MM in its time zone).
type AIUsage struct {
	OrgID            string `gorm:"primaryKey"`
	Month            string `gorm:"primaryKey"`
	PromptTokens     int64
	CompletionTokens int64
	Jobs             int
	UpdatedAt        time.Time
}

// TableName is ai_usage.
func (AIUsage) TableName() string { return "ai_usage" }

// AIMonth is the usage month (YYYY-MM) of t for org (Organization.Month,
// as for the ticket limit).
func AIMonth(org *Organization, t time.Time) string { return org.Month(t) }

// AIUsageReport is an organization's token use in one month against its
// plan's quota (nil: unlimited).
type AIUsageReport struct {
	// Plan is the organization's plan, whose quota this is.
	Plan             string
	Month            string
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	Jobs             int
	Quota            *int64
	Remaining        *int64
	// ResetsAt is the start of the next month in the organization's time zone.
	ResetsAt time.Time
}

// AIUsageFor reports orgID's usage in the month of now.
func AIUsageFor(ctx context.Context, db *gorm.DB, orgID string, now time.Time) (*AIUsageReport, error) {
	org, err := FindOrg(ctx, db, orgID)
	if err != nil {
		return nil, err
	}
	return aiUsageReport(db.WithContext(ctx), org, now)
}

func aiUsageReport(tx *gorm.DB, org *Organization, now time.Time) (*AIUsageReport, error) {
	plan, err := FindPlan(tx.Statement.Context, tx, org.Plan)
	if err != nil {
		return nil, err
	}
	local := now.In(org.Location())
	r := &AIUsageReport{Plan: org.Plan, Month: AIMonth(org, now),
		ResetsAt: time.Date(local.Year(), local.Month()+1, 1, 0, 0, 0, 0, local.Location()).UTC()}
	var u AIUsage
	err = tx.Take(&u, "org_id = ? AND month = ?", org.ID, r.Month).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	r.PromptTokens, r.CompletionTokens, r.Jobs = u.PromptTokens, u.CompletionTokens, u.Jobs
	r.TotalTokens = u.PromptTokens + u.CompletionTokens
	if !plan.AI {
		zero := int64(0)
		r.Quota = &zero
	} else if plan.AITokensPerMonth != nil {
		q := *plan.AITokensPerMonth
		r.Quota = &q
	}
	if r.Quota != nil {
		rem := max(*r.Quota-r.TotalTokens, 0)
		r.Remaining = &rem
	}
	return r, nil
}

// CheckAIQuota refuses AI work for a plan without AI
// (plan_upgrade_required) and once the month's tokens are spent
// (ai_quota_exceeded). The quota is checked before work starts, so jobs
// already running when it is reached finish (they may exceed it by their
// own size).
func CheckAIQuota(tx *gorm.DB, org *Organization, now time.Time) error {
	r, err := aiUsageReport(tx, org, now)
	if err != nil {
		return err
	}
	if r.Quota == nil {
		return nil
	}
	if *r.Quota == 0 {
		return Err(ErrLimit, CodePlanUpgradeRequired, "The %s plan does not include AI; upgrade to business or enterprise.", org.Plan)
	}
	if r.TotalTokens >= *r.Quota {
		return Err(ErrLimit, CodeAIQuotaExceeded, "This organization has used %d of the %d AI tokens of its %s plan for %s; the quota renews on %s.",
			r.TotalTokens, *r.Quota, org.Plan, r.Month, r.ResetsAt.In(org.Location()).Format(time.DateOnly))
	}
	return nil
}

// RecordAIUsage adds one job's tokens to its organization's month, in tx.
func RecordAIUsage(tx *gorm.DB, orgID, month string, prompt, completion int64) error {
	now := Now()
	return tx.Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "org_id"}, {Name: "month"}},
		DoUpdates: clause.Assignments(map[string]any{
			"prompt_tokens":     gorm.Expr("ai_usage.prompt_tokens + ?", prompt),
			"completion_tokens": gorm.Expr("ai_usage.completion_tokens + ?", completion),
			"jobs":              gorm.Expr("ai_usage.jobs + 1"),
			"updated_at":        now,
		}),
	}).Create(&AIUsage{OrgID: orgID, Month: month, PromptTokens: prompt, CompletionTokens: completion, Jobs: 1, UpdatedAt: now}).Error
}
