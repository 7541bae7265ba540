package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Billing staff's console (/ops/, api/console): its browser sessions and
// the audit log of every staff action.

// StaffSession is one signed-in browser of a billing-staff user. The
// cookie holds a secret whose SHA-256 is ID: the table alone opens no
// session. CSRFToken is what every form of the session must carry.
type StaffSession struct {
	ID         string `gorm:"primaryKey"`
	UserID     string
	Email      string
	CSRFToken  string `gorm:"column:csrf_token"`
	ClientIP   string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt ends the session however busy it is (its absolute
	// lifetime); the idle timeout ends it sooner.
	ExpiresAt time.Time
	EndedAt   *time.Time
}

// ErrStaffSessionEnded says a console cookie opens no session: unknown,
// signed out, idle too long, past its lifetime, or of a user who is no
// longer staff.
var ErrStaffSessionEnded = errors.New("staff session ended")

// StaffSessionID is the ID of the session a cookie secret opens.
func StaffSessionID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// OpenStaffSession signs user in on tx for lifetime and returns the
// cookie's secret (shown once, stored only as its hash) and the session.
func OpenStaffSession(tx *gorm.DB, user *IdentityUser, clientIP string, now time.Time, lifetime time.Duration) (string, *StaffSession, error) {
	secret, csrf := rand.Text()+rand.Text(), rand.Text()+rand.Text()
	s := &StaffSession{ID: StaffSessionID(secret), UserID: user.ID, Email: user.Email, CSRFToken: csrf, ClientIP: clientIP,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(lifetime)}
	if err := tx.Create(s).Error; err != nil {
		return "", nil, err
	}
	return secret, s, nil
}

// FindStaffSession returns the live session the cookie secret opens: not
// ended, seen within idle, before its expiry, of a user who is staff now
// (a revoked grant ends every session at its next request). Anything else
// is ErrStaffSessionEnded.
func FindStaffSession(ctx context.Context, db *gorm.DB, secret string, now time.Time, idle time.Duration) (*StaffSession, error) {
	if secret == "" {
		return nil, ErrStaffSessionEnded
	}
	var s StaffSession
	err := db.WithContext(ctx).
		Where("id = ? AND ended_at IS NULL AND expires_at > ? AND last_seen_at > ?", StaffSessionID(secret), now, now.Add(-idle)).
		Where("EXISTS (SELECT 1 FROM identity_users u WHERE u.id = staff_sessions.user_id AND u.staff)").
		Take(&s).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrStaffSessionEnded
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// TouchStaffSession records that the session was used at now, which moves
// its idle timeout on.
func TouchStaffSession(ctx context.Context, db *gorm.DB, id string, now time.Time) error {
	return db.WithContext(ctx).Model(&StaffSession{}).Where("id = ? AND ended_at IS NULL", id).Update("last_seen_at", now).Error
}

// EndStaffSession signs a session out.
func EndStaffSession(tx *gorm.DB, id string, now time.Time) error {
	return tx.Model(&StaffSession{}).Where("id = ? AND ended_at IS NULL", id).Update("ended_at", now).Error
}

// PurgeStaffSessions deletes the sessions that are over: signed out or
// past their lifetime (an idle one goes at its lifetime's end). The API
// runs it with its other purges.
func PurgeStaffSessions(ctx context.Context, db *gorm.DB, now time.Time) (int64, error) {
	res := db.WithContext(ctx).Where("ended_at IS NOT NULL OR expires_at <= ?", now).Delete(&StaffSession{})
	return res.RowsAffected, res.Error
}

// Channels a staff action came through.
const (
	StaffViaConsole = "console"
	StaffViaAPI     = "api"
	StaffViaShell   = "shell"
)

// Staff actions and their outcomes.
const (
	StaffSignIn      = "sign_in"
	StaffSignOut     = "sign_out"
	StaffRetryChange = "billing.change.retry"

	StaffOutcomeDone    = "done"
	StaffOutcomeRefused = "refused"
)

// StaffAuditEntry is one staff action: who (Actor, the e-mail; ActorID,
// the user's id when known), what (Action on Target, of organization
// OrgID), when, through which channel, and how it ended (Outcome, with
// Detail: the refusal's code or what was started).
type StaffAuditEntry struct {
	ID        string `gorm:"primaryKey"`
	ActorID   string
	Actor     string
	Channel   string
	Action    string
	Target    string
	OrgID     string
	Outcome   string
	Detail    string
	ClientIP  string
	CreatedAt time.Time
}

// TableName is the audit log's table.
func (StaffAuditEntry) TableName() string { return "staff_audit_log" }

// RecordStaffAction writes e to the audit log on tx (its ID and time are
// filled in when empty).
func RecordStaffAction(tx *gorm.DB, e *StaffAuditEntry) error {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = Now()
	}
	return tx.Create(e).Error
}

// StaffAuditLog lists the audit log newest first, limit entries from
// offset.
func StaffAuditLog(ctx context.Context, db *gorm.DB, limit, offset int) ([]StaffAuditEntry, error) {
	var out []StaffAuditEntry
	err := db.WithContext(ctx).Order("created_at DESC, id DESC").Limit(limit).Offset(offset).Find(&out).Error
	return out, err
}

// StaffChangeFilter selects changes in the console: any of them may be
// empty. Plan matches the plan moved from or to; From and To bound the
// request's time.
type StaffChangeFilter struct {
	Status   string
	OrgID    string
	Plan     string
	From, To *time.Time
}

// StaffChangeRow is a change in the console's list, with its
// organization's name.
type StaffChangeRow struct {
	SubscriptionChange `gorm:"embedded"`
	OrgName            string
}

// StaffChanges lists the changes f selects, failed ones first and then
// newest first, limit rows from offset.
func StaffChanges(ctx context.Context, db *gorm.DB, f StaffChangeFilter, limit, offset int) ([]StaffChangeRow, error) {
	q := db.WithContext(ctx).Table("subscription_changes AS c").
		Select("c.*, COALESCE(o.name, '') AS org_name").
		Joins("LEFT JOIN organizations o ON o.id = c.org_id")
	if f.Status != "" {
		q = q.Where("c.status = ?", f.Status)
	}
	if f.OrgID != "" {
		q = q.Where("c.org_id = ?", f.OrgID)
	}
	if f.Plan != "" {
		q = q.Where("c.from_plan = ? OR c.to_plan = ?", f.Plan, f.Plan)
	}
	if f.From != nil {
		q = q.Where("c.created_at >= ?", *f.From)
	}
	if f.To != nil {
		q = q.Where("c.created_at < ?", *f.To)
	}
	var rows []StaffChangeRow
	err := q.Order("CASE WHEN c.status = 'failed' THEN 0 ELSE 1 END, c.created_at DESC, c.id DESC").
		Limit(limit).Offset(offset).Scan(&rows).Error
	return rows, err
}
