package models

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"
	"gorm.io/gorm"
)

// Deals import as new deals only (an upsert would move stages around the
// pipeline's rules: a stage moves with PUT /crm/deals/{id}). Each gets
// the first entry of its stage history, as a created deal does; its
// contact and assignee must be the organization's.

var dealImport = ImportObject{
	Name: "deals", App: "crm", FieldObject: AutomationDeal,
	Columns: []ImportColumn{
		{Field: "title", Max: 300, Required: true},
		{Field: "amount", Max: 20, Check: importedAmount},
		{Field: "currency", Max: 3, Check: importedCurrency},
		{Field: "stage", Max: 20, Check: oneOf(StageNew, StageQualified, StageMeeting, StageProposal, StageNegotiation, StageWon, StageLost)},
		{Field: "closeDate", Max: 10, Check: importedDate},
		{Field: "companyName", Max: 200},
		{Field: "contactEmail", Max: 254, Check: importedEmail, Address: true},
		{Field: "contactId", Max: 36, Check: anID},
		{Field: "assignedToId", Max: 36, Check: anID},
		{Field: "lostReason", Max: 1000},
		{Field: "createdAt", Max: 40, Check: importedTime},
	},
	Ignored:       []string{"id", "orgId", "leadId", "probability", "stageChangedAt", "wonAt", "updatedAt", "history"},
	write:         writeDeals,
	ExportColumns: []string{"id", "title", "amount", "currency", "stage", "closeDate", "companyName", "contactEmail", "contactId", "assignedToId", "lostReason", "createdAt", "updatedAt"},
	Filters:       []string{"stage", "assignedToId", "contactId"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		return Equal(Equal(Equal(q.Model(&Deal{}), "stage", f["stage"]), "assigned_to_id", f["assignedToId"]), "contact_id", f["contactId"])
	},
}

func importedAmount(v string) (string, string) {
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || !(n >= 0 && n <= 999999999999) { // NaN is neither

		return "", "A number from 0 to 999,999,999,999."
	}
	return strconv.FormatFloat(n, 'f', -1, 64), ""
}

var currencies = validator.New()

func importedCurrency(v string) (string, string) {
	v = strings.ToUpper(v)
	if currencies.Var(v, "iso4217") != nil {
		return "", "An ISO 4217 currency code (EUR, USD…)."
	}
	return v, ""
}

func importedDate(v string) (string, string) {
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		return "", "A date, 2006-01-02."
	}
	return v, ""
}

// existing are those of ids that name a row of table in orgID (where
// narrows them further).
func existing(tx *gorm.DB, table, orgID string, ids []string, where ...any) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	var found []string
	q := tx.Table(table).Where("org_id = ? AND id IN ?", orgID, ids)
	if len(where) > 0 {
		q = q.Where(where[0], where[1:]...)
	}
	err := q.Pluck("id", &found).Error
	for _, id := range found {
		out[id] = true
	}
	return out, err
}

func writeDeals(w *importWriter, rows []ImportRow) error {
	contacts, err := existing(w.tx, "contacts", w.imp.OrgID, valuesOf(rows, "contactId"))
	if err != nil {
		return err
	}
	members, err := w.members(valuesOf(rows, "assignedToId"))
	if err != nil {
		return err
	}
	var org Organization
	if err := w.tx.Select("currency").Take(&org, "id = ?", w.imp.OrgID).Error; err != nil {
		return err
	}
	var deals []*Deal
	var history []*DealStageChange
	for i := range rows {
		r := &rows[i]
		bad := w.missing(r)
		if id := r.Values["contactId"]; id != "" && !contacts[id] {
			bad = append(bad, FieldError{Field: "contactId", Code: "not_found", Message: "Must be the id of a contact of this organization."})
		}
		if id := r.Values["assignedToId"]; id != "" && !members[id] {
			bad = append(bad, FieldError{Field: "assignedToId", Code: "not_a_member", Message: "Must be the id of a member of this organization."})
		}
		if r.Values["stage"] == StageLost && r.Values["lostReason"] == "" {
			bad = append(bad, FieldError{Field: "lostReason", Code: "required", Message: "A deal created as LOST needs a lostReason."})
		}
		fields, fieldProblems, err := w.fields(r, nil, true)
		if err != nil {
			return err
		}
		if bad = append(bad, fieldProblems...); len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, slices.Clip(bad))
			continue
		}
		created := w.createdAt(r)
		d := &Deal{ID: NewID(), OrgID: w.imp.OrgID, Title: r.Values["title"], Currency: org.Currency, Stage: StageNew,
			CreatedBy: w.imp.CreatedBy, StageChangedAt: created, CreatedAt: created, UpdatedAt: w.now, Fields: fields}
		setCell(&d.Currency, r, "currency")
		setCell(&d.Stage, r, "stage")
		setCell(&d.CloseDate, r, "closeDate")
		setCell(&d.CompanyName, r, "companyName")
		setCell(&d.ContactEmail, r, "contactEmail")
		setCell(&d.LostReason, r, "lostReason")
		d.Amount, _ = strconv.ParseFloat(r.Values["amount"], 64)
		if id := r.Values["contactId"]; id != "" {
			d.ContactID = &id
		}
		if id := r.Values["assignedToId"]; id != "" {
			d.AssignedToID = &id
		}
		if d.Stage == StageWon {
			d.WonAt = &created
		}
		deals = append(deals, d)
		history = append(history, &DealStageChange{ID: NewID(), OrgID: d.OrgID, DealID: d.ID, ToStage: d.Stage, ChangedBy: w.imp.CreatedBy, CreatedAt: created})
		w.batch.Progress.Created++
	}
	if len(deals) == 0 {
		return nil
	}
	if err := w.tx.CreateInBatches(deals, importInsertBatch).Error; err != nil {
		return err
	}
	return w.tx.CreateInBatches(history, importInsertBatch).Error
}
