package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The stored versions of a workspace's SLA policy: each PUT records the
// next one, and a ticket's clocks keep the version they were planned under.

// SLAPolicyVersion is one version of a workspace's SLA policy: a PUT
// records the next one, and a ticket keeps the version it was opened
// under (POST /helpdesk/sla-policy/apply moves open tickets to the
// latest).
type SLAPolicyVersion struct {
	OrgID     string `gorm:"primaryKey"`
	Version   int    `gorm:"primaryKey"`
	Policy    string // SLAPolicy's JSON
	CreatedBy string
	CreatedAt time.Time
}

func (SLAPolicyVersion) TableName() string { return "sla_policies" }

// Parsed is the version's policy.
func (v *SLAPolicyVersion) Parsed() (*SLAPolicy, error) {
	var p SLAPolicy
	if err := json.Unmarshal([]byte(v.Policy), &p); err != nil {
		return nil, fmt.Errorf("SLA policy %s/%d: %w", v.OrgID, v.Version, err)
	}
	return &p, nil
}

// SaveSLAPolicy validates p and records it as the workspace's next policy
// version, by the member or key named by, for the tickets opened from now
// on. escalation.reassignTo must name an active member of the workspace.
func SaveSLAPolicy(tx *gorm.DB, orgID string, p *SLAPolicy, by string, now time.Time) (*SLAPolicyVersion, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if r := p.Escalation.ReassignTo; r != nil {
		active, err := IsActiveMember(tx, orgID, *r)
		if err != nil {
			return nil, err
		}
		if !active {
			return nil, Invalid(FieldError{Field: "escalation.reassignTo", Code: "member", Message: "Must be null or an active member's id."})
		}
	}
	// One version at a time: the workspace's row is the lock.
	if err := LockForUpdate(tx).Select("id").Take(&Organization{}, "id = ?", orgID).Error; err != nil {
		return nil, err
	}
	var latest int
	if err := tx.Model(&SLAPolicyVersion{}).Where("org_id = ?", orgID).Select("COALESCE(MAX(version), 0)").Scan(&latest).Error; err != nil {
		return nil, err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	v := &SLAPolicyVersion{OrgID: orgID, Version: latest + 1, Policy: string(body), CreatedBy: by, CreatedAt: now}
	return v, tx.Create(v).Error
}

// ErrNoSLAPolicy is the 404 of a workspace without an SLA policy.
var ErrNoSLAPolicy = Err(ErrNotFound, "not_found", "The workspace has no SLA policy; PUT one.")

// CurrentSLAPolicy is the workspace's latest policy version, or nil when
// it has none.
func CurrentSLAPolicy(db *gorm.DB, orgID string) (*SLAPolicyVersion, error) {
	var v SLAPolicyVersion
	err := db.Where("org_id = ?", orgID).Order("version DESC").Take(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return &v, err
}

// SLAPolicyOf is version version of the workspace's policy.
func SLAPolicyOf(db *gorm.DB, orgID string, version int) (*SLAPolicy, error) {
	var v SLAPolicyVersion
	if err := db.Take(&v, "org_id = ? AND version = ?", orgID, version).Error; err != nil {
		return nil, err
	}
	return v.Parsed()
}
