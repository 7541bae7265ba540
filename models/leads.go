package models

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// idNamespace derives stable ids for records that retries must not
// duplicate (a workflow's activity run twice writes the same row once).
var idNamespace = uuid.MustParse("6f2d3c1e-7b4a-4f6e-9c1d-2a8b5e7f9a10")

// DerivedID is a deterministic id for parts.
func DerivedID(parts ...string) string {
	b := []byte{}
	for _, p := range parts {
		b = append(append(b, p...), 0)
	}
	return uuid.NewSHA1(idNamespace, b).String()
}

// LeadWithEmail selects organization orgID's lead with e-mail address
// email (normalized, not empty). It repeats the predicate of the partial
// unique index leads_org_email (the e-mail is not empty) so that
// PostgreSQL can use the index also in the generic plan of a prepared
// statement, which knows nothing of the parameters' values: without it,
// that plan reads every lead of the organization.
func LeadWithEmail(orgID, email string) func(*gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		return db.Where("org_id = ? AND email = ? AND email <> ''", orgID, email)
	}
}

// InsertLeadIntake is the statement that records in unless an intake of
// its organization already holds its dedupe key (then it writes nothing),
// returning the intake's lead_id and duplicate; for RecordWithStart. With
// matchEmail, the organization's lead with that e-mail, if any, becomes the
// intake's lead (a duplicate), looked up in the same statement.
func InsertLeadIntake(in *LeadIntake, matchEmail string) (string, []any) {
	leadID, duplicate := "?", "?"
	args := []any{in.ID, in.OrgID, in.DedupeKey}
	if matchEmail != "" {
		// The predicate is LeadWithEmail's (see there).
		const match = "FROM leads WHERE org_id = ? AND email = ? AND email <> ''"
		leadID = "COALESCE((SELECT id " + match + " LIMIT 1), ?)"
		duplicate = "EXISTS (SELECT 1 " + match + ")"
		args = append(args, in.OrgID, matchEmail, in.LeadID, in.Payload, in.Status, in.OrgID, matchEmail)
	} else {
		args = append(args, in.LeadID, in.Payload, in.Status, in.Duplicate)
	}
	args = append(args, in.Authenticated, in.CreatedAt)
	return "INSERT INTO lead_intakes (id, org_id, dedupe_key, lead_id, payload, status, duplicate, authenticated, created_at)\n" +
		"VALUES (?, ?, ?, " + leadID + ", ?, ?, " + duplicate + ", ?, ?)\n" +
		"ON CONFLICT (org_id, dedupe_key) DO NOTHING RETURNING lead_id, duplicate", args
}

// RescoreLead recomputes l's score from its fields and its recent
// (non-system) activities. It does not save l.
func RescoreLead(tx *gorm.DB, l *Lead, now time.Time) error {
	var recent int64
	err := tx.Model(&LeadActivity{}).
		Where("lead_id = ? AND type <> ? AND occurred_at >= ? AND occurred_at <= ?", l.ID, "system", now.Add(-30*24*time.Hour), now).
		Count(&recent).Error
	if err != nil {
		return err
	}
	r := Score(ScoreInput{Email: l.Email, Phone: l.Phone, Company: l.Company, Source: l.Source, Value: l.Value,
		RecentActivities: int(recent), LastActivityAt: l.LastActivityAt, Now: now, Status: l.Status})
	l.Score, l.Probability, l.ScoreFactors = r.Score, r.Probability, r.FactorsJSON()
	return nil
}

// AddLeadActivity records an activity (idempotently, when a.ID is derived),
// moves the lead's last-activity mark and rescores it, in tx.
func AddLeadActivity(tx *gorm.DB, l *Lead, a *LeadActivity) error {
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(a)
	if res.Error != nil {
		return res.Error
	}
	if a.Type != "system" && (l.LastActivityAt == nil || a.OccurredAt.After(*l.LastActivityAt)) {
		t := a.OccurredAt
		l.LastActivityAt = &t
	}
	now := Now()
	if err := RescoreLead(tx, l, now); err != nil {
		return err
	}
	l.UpdatedAt = now
	return tx.Save(l).Error
}

// NextAssignee picks the next AGENT of orgID in round-robin order (by
// membership age), remembering the choice under kind. It returns "" when
// the organization has no active AGENT. Call it in a transaction.
func NextAssignee(tx *gorm.DB, orgID, kind string) (string, error) {
	var agents []string
	if err := tx.Model(&Member{}).Where("org_id = ? AND role = ? AND status = ?", orgID, RoleAgent, MemberActive).
		Order("created_at, id").Pluck("id", &agents).Error; err != nil {
		return "", err
	}
	if len(agents) == 0 {
		return "", nil
	}
	var cur AssignmentCursor
	err := LockForUpdate(tx).Take(&cur, "org_id = ? AND kind = ?", orgID, kind).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return "", err
	}
	next := agents[0]
	if cur.LastMemberID != nil {
		for i, id := range agents {
			if id == *cur.LastMemberID {
				next = agents[(i+1)%len(agents)]
				break
			}
		}
	}
	cur = AssignmentCursor{OrgID: orgID, Kind: kind, LastMemberID: &next, UpdatedAt: Now()}
	err = tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "org_id"}, {Name: "kind"}},
		DoUpdates: clause.AssignmentColumns([]string{"last_member_id", "updated_at"}),
	}).Create(&cur).Error
	return next, err
}
