package models

import (
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Merging duplicates (issue 47): a contact merged into another, or a
// customer into another. StartMerge checks and records the merge; its
// PersonMerge workflow moves what points at the duplicate to the survivor
// in batches (MoveMergeRows), then FinishMerge folds the duplicate's
// values into the survivor and deletes it, in one transaction. Each step
// is idempotent: a worker killed mid-merge resumes and ends with every row
// pointing at the survivor.

// MergeInput names a merge: its PersonMerge workflow's input.
type MergeInput struct {
	OrgID   string `json:"orgId"`
	MergeID string `json:"mergeId"`
}

// A merge's status.
const (
	MergeRunning = "running"
	MergeDone    = "done"
)

// PersonMerge is the record of one merge.
type PersonMerge struct {
	ID     string `gorm:"primaryKey"`
	OrgID  string
	Object string
	FromID string
	IntoID string
	Status string
	// Moved counts, by reference ("deals.contact_id"), the rows moved.
	Moved      string
	CreatedBy  Actor
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// MergeRef is a column that points at a person: rows of Table whose
// Column is the duplicate's id move to the survivor.
type MergeRef struct{ Table, Column string }

// Name is the reference as "table.column".
func (r MergeRef) Name() string { return r.Table + "." + r.Column }

// MergeRefs are, for each object that merges, what points at it. The
// links between contacts and customers are not among them: LinkPeople
// sets them anew once the duplicate is gone.
var MergeRefs = map[string][]MergeRef{
	AutomationContact: {{"deals", "contact_id"}, {"tasks", "contact_id"}, {"leads", "contact_id"}},
	AutomationCustomer: {{"tickets", "customer_id"}, {"time_entries", "customer_id"}, {"customer_events", "customer_id"},
		{"ticket_comments", "author_customer_id"}},
}

var errMergeSame = Invalid(FieldError{Field: "from", Code: "same", Message: "A record is not merged into itself."})

// StartMerge checks a merge of fromID into intoID (both orgID's objects
// of the kind) and records it, running: refused when they are one, when
// either is not the organization's (422 naming from, 404 for into), and
// when either is already part of a merge under way or from was merged
// away before (409 merge_in_progress).
func StartMerge(tx *gorm.DB, orgID, object, fromID, intoID string, by Actor) (*PersonMerge, error) {
	if fromID == intoID {
		return nil, errMergeSame
	}
	if _, err := FindAutomationObject(LockForUpdate(tx), object, orgID, intoID); err != nil {
		return nil, err
	}
	if !ValidID(fromID) {
		return nil, Invalid(FieldError{Field: "from", Code: "uuid", Message: "The id of the " + object + " to merge into this one."})
	}
	if _, err := FindAutomationObject(LockForUpdate(tx), object, orgID, fromID); errors.Is(err, ErrNotFound) {
		return nil, Invalid(FieldError{Field: "from", Code: "not_found", Message: "No " + object + " with that id in this organization."})
	} else if err != nil {
		return nil, err
	}
	var busy int64
	err := tx.Model(&PersonMerge{}).Where("org_id = ? AND object = ? AND status = ? AND (from_id IN ? OR into_id = ?)",
		orgID, object, MergeRunning, []string{fromID, intoID}, fromID).Count(&busy).Error
	if err != nil {
		return nil, err
	}
	if busy > 0 {
		return nil, Err(ErrConflict, "merge_in_progress", "One of the two is part of a merge under way; wait for it to finish.")
	}
	m := &PersonMerge{ID: NewID(), OrgID: orgID, Object: object, FromID: fromID, IntoID: intoID, Status: MergeRunning, Moved: "{}",
		CreatedBy: by, CreatedAt: Now()}
	return m, tx.Create(m).Error
}

// MoveMergeRows moves at most n rows of ref from the duplicate to the
// survivor, and says how many it moved (0: none are left).
func MoveMergeRows(tx *gorm.DB, m *PersonMerge, ref MergeRef, n int) (int64, error) {
	ids := tx.Table(ref.Table).Select("id").Where("org_id = ? AND "+ref.Column+" = ?", m.OrgID, m.FromID).Limit(n)
	res := tx.Table(ref.Table).Where("id IN (?)", ids).Update(ref.Column, m.IntoID)
	return res.RowsAffected, res.Error
}

// MergedInto is the survivor orgID's object id was merged into ("" when
// it was not).
func MergedInto(db *gorm.DB, orgID, object, id string) (string, error) {
	var m PersonMerge
	err := db.Where("org_id = ? AND object = ? AND from_id = ? AND status = ?", orgID, object, id, MergeDone).Take(&m).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", nil
	}
	return m.IntoID, err
}

// MovedCounts are m's moved rows by reference.
func (m *PersonMerge) MovedCounts() map[string]int64 {
	out := map[string]int64{}
	_ = json.Unmarshal([]byte(m.Moved), &out)
	return out
}

// FinishMerge ends merge m in tx: the rows still pointing at the duplicate
// (made since the batches) move too, the survivor keeps its values and
// takes the duplicate's where its own are blank (custom fields too), the
// duplicate is deleted, the contact–customer links are set anew, and the
// merge is done. It returns the survivor; nil when m was done before.
func FinishMerge(tx *gorm.DB, m *PersonMerge, moved map[string]int64) (any, error) {
	if m.Status == MergeDone {
		return nil, nil
	}
	for _, ref := range MergeRefs[m.Object] {
		n, err := MoveMergeRows(tx, m, ref, 1<<30)
		if err != nil {
			return nil, err
		}
		moved[ref.Name()] += n
	}
	into, err := FindAutomationObject(LockForUpdate(tx), m.Object, m.OrgID, m.IntoID)
	if err != nil {
		return nil, err
	}
	from, err := FindAutomationObject(LockForUpdate(tx), m.Object, m.OrgID, m.FromID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	var emails []string
	if from != nil {
		emails = foldInto(into, from)
		if err := tx.Save(into).Error; err != nil {
			return nil, err
		}
		if err := tx.Delete(from).Error; err != nil {
			return nil, err
		}
	}
	if err := LinkPeople(tx, m.OrgID, emails...); err != nil {
		return nil, err
	}
	now := Now()
	counts, _ := json.Marshal(moved)
	m.Status, m.Moved, m.FinishedAt = MergeDone, string(counts), &now
	if err := tx.Save(m).Error; err != nil {
		return nil, err
	}
	// The survivor as it is now (its link set by LinkPeople).
	return FindAutomationObject(tx, m.Object, m.OrgID, m.IntoID)
}

// foldInto gives into the duplicate from's values where its own are
// blank, and returns both e-mails (whose links change).
func foldInto(into, from any) []string {
	keep := func(dst *string, src string) {
		if *dst == "" {
			*dst = src
		}
	}
	fields := func(dst *FieldValues, src FieldValues) {
		if *dst == nil {
			*dst = FieldValues{}
		}
		for k, v := range src {
			if _, has := (*dst)[k]; !has {
				(*dst)[k] = v
			}
		}
	}
	switch a := into.(type) {
	case *Contact:
		b := from.(*Contact)
		keep(&a.Email, b.Email)
		if a.Phone == "" {
			a.SetPhone(b.Phone)
		}
		keep(&a.Company, b.Company)
		keep(&a.Designation, b.Designation)
		keep(&a.Notes, b.Notes)
		fields(&a.Fields, b.Fields)
		a.UpdatedAt = Now()
		return []string{a.Email, b.Email}
	case *Customer:
		b := from.(*Customer)
		keep(&a.Phone, b.Phone)
		keep(&a.Company, b.Company)
		keep(&a.Notes, b.Notes)
		fields(&a.Fields, b.Fields)
		a.UpdatedAt = Now()
		return []string{a.Email, b.Email}
	}
	return nil
}

// DuplicatePair is a pair of an organization's contacts that may be one
// person, and why: the same e-mail, the same phone number, or the same
// name at the same company. SecondID is the newer of the two.
type DuplicatePair struct {
	Reason   string
	FirstID  string
	SecondID string
}

// DuplicateGroup is a contact that has candidate duplicates among the
// contacts older than it (a page of duplicates lists these).
type DuplicateGroup struct {
	ID        string
	CreatedAt time.Time
}

// Duplicate reasons.
const (
	DuplicateEmail       = "email"
	DuplicatePhone       = "phone"
	DuplicateNameCompany = "name_company"
)

// duplicatePairs is the union of orgID's candidate pairs. Each pair is
// found through an index: contacts_org_email for e-mails,
// contacts_org_phone for phone numbers (in E.164, phone_e164), and
// contacts_org_name_company for a name at a company (both without regard
// to case).
func duplicatePairs(db *gorm.DB, orgID string) *gorm.DB {
	pair := func(reason, on, where string) *gorm.DB {
		return db.Table("contacts AS a").Joins("JOIN contacts b ON b.org_id = a.org_id AND a.id < b.id AND "+on).
			Select(`'`+reason+`' AS reason, CAST(a.id AS text) AS first_id, CAST(b.id AS text) AS second_id, b.created_at`).
			Where("a.org_id = ? AND "+where, orgID)
	}
	return db.Raw("? UNION ALL ? UNION ALL ?", pair(DuplicateEmail, "b.email = a.email", "a.email <> ''"),
		pair(DuplicatePhone, "b.phone_e164 = a.phone_e164", "a.phone_e164 <> ''"),
		pair(DuplicateNameCompany, "lower(b.name) = lower(a.name) AND lower(b.company) = lower(a.company) AND b.company <> ''", "a.company <> ''"))
}

// ContactDuplicates is the query of orgID's contacts that have candidate
// duplicates among older contacts, a list of DuplicateGroups to paginate
// newest first on created_at and id (web.Paginate).
func ContactDuplicates(db *gorm.DB, orgID string) *gorm.DB {
	return db.Table("(SELECT DISTINCT second_id AS id, created_at FROM (?) AS pairs) AS duplicates", duplicatePairs(db, orgID))
}

// DuplicatePairsOf are orgID's candidate pairs whose newer contact is one
// of ids (a page of ContactDuplicates).
func DuplicatePairsOf(db *gorm.DB, orgID string, ids []string) ([]DuplicatePair, error) {
	var out []DuplicatePair
	if len(ids) == 0 {
		return out, nil
	}
	err := db.Table("(?) AS pairs", duplicatePairs(db, orgID)).Where("second_id IN ?", ids).Order("second_id, first_id, reason").Find(&out).Error
	return out, err
}
