package models

import (
	"time"

	"gorm.io/gorm"
)

// Roles. OWNER implies ADMIN.
const (
	RoleOwner = "OWNER"
	RoleAdmin = "ADMIN"
	RoleAgent = "AGENT"
)

// Member states: an invited member holds a seat until its invitation is
// accepted (POST /crm/invitations/accept with the token) or withdrawn.
// A removed member is kept as a tombstone (it holds no seat and grants no
// access) so that a membership the identity service has not yet forgotten
// is not mirrored back in.
const (
	MemberActive  = "active"
	MemberInvited = "invited"
	MemberRemoved = "removed"
)

// Member is a user's membership of an organization, or a pending invite.
type Member struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	UserID    *string
	Email     string
	Name      string
	Role      string
	Status    string
	Target    float64
	InvitedBy *string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IsAdmin tells whether role may administer the organization.
func IsAdmin(role string) bool { return role == RoleOwner || role == RoleAdmin }

// ValidRole tells whether r is a role.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleAdmin || r == RoleAgent }

// SeatsInUse counts active members plus pending invites.
func SeatsInUse(tx *gorm.DB, orgID string) (int64, error) {
	var n int64
	err := tx.Model(&Member{}).Where("org_id = ? AND status <> ?", orgID, MemberRemoved).Count(&n).Error
	return n, err
}

// CheckSeat fails with seat_limit_reached when adding one more member would
// exceed the plan. Call it inside the transaction that adds the member,
// after locking the organization row, so two invites cannot take the last
// seat together.
func CheckSeat(tx *gorm.DB, org *Organization) error {
	plan, err := FindPlan(tx.Statement.Context, tx, org.Plan)
	if err != nil {
		return err
	}
	if plan.Seats == nil {
		return nil
	}
	used, err := SeatsInUse(tx, org.ID)
	if err != nil {
		return err
	}
	if used >= int64(*plan.Seats) {
		return Err(ErrLimit, "seat_limit_reached", "All %d seats of the %s plan are in use (members and pending invites).", *plan.Seats, plan.Name)
	}
	return nil
}

// CountOwners counts active owners of an organization.
func CountOwners(tx *gorm.DB, orgID string) (int64, error) {
	var n int64
	err := tx.Model(&Member{}).Where("org_id = ? AND role = ? AND status = ?", orgID, RoleOwner, MemberActive).Count(&n).Error
	return n, err
}

// IsActiveMember tells whether memberID is an active member of orgID (not
// invited, not removed).
func IsActiveMember(tx *gorm.DB, orgID, memberID string) (bool, error) {
	var n int64
	err := tx.Model(&Member{}).Where("org_id = ? AND id = ? AND status = ?", orgID, memberID, MemberActive).Count(&n).Error
	return n == 1, err
}

// ActiveAdminIDs are the ids of orgID's active OWNERs and ADMINs, in id
// order: who is told of what concerns the whole organization.
func ActiveAdminIDs(tx *gorm.DB, orgID string) ([]string, error) {
	var ids []string
	err := tx.Model(&Member{}).Where("org_id = ? AND role IN ? AND status = ?", orgID, []string{RoleOwner, RoleAdmin}, MemberActive).
		Order("id").Pluck("id", &ids).Error
	return ids, err
}

// CheckMember fails with a 422 on field unless memberID is a (not removed)
// member of orgID; nil or "" passes.
func CheckMember(db *gorm.DB, orgID, field string, memberID *string) error {
	return checkReference(db.Where("status <> ?", MemberRemoved), &Member{}, orgID, memberID,
		FieldError{Field: field, Code: "not_a_member", Message: "Must be the id of a member of this organization."})
}
