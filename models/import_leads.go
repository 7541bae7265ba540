package models

import (
	"strconv"

	"gorm.io/gorm"
)

// Leads import as new leads, scored as a lead created by the API is; a
// lead's e-mail is unique in an organization, so a row of one that a lead
// has (or an earlier row of the file took) fails. An imported lead is not
// an intake: no round-robin assignment, timeline entry or notification
// follows it (it keeps the assignee its row names, or none).

var leadImport = ImportObject{
	Name: "leads", App: "crm", FieldObject: AutomationLead,
	Columns: []ImportColumn{
		{Field: "name", Max: 200},
		{Field: "email", Max: 254, Check: importedEmail, Address: true},
		{Field: "phone", Max: 50},
		{Field: "company", Max: 200},
		{Field: "value", Max: 20, Check: importedAmount},
		{Field: "source", Max: 100},
		{Field: "status", Max: 20, Check: oneOf(LeadNew, LeadContacted, LeadQualified, LeadUnqualified)},
		{Field: "assignedToId", Max: 36, Check: anID},
		{Field: "createdAt", Max: 40, Check: importedTime},
	},
	Ignored: []string{"id", "orgId", "score", "probability", "scoreFactors", "contactId", "dealId", "lastActivityAt", "updatedAt"},
	write:   writeLeads,
	ExportColumns: []string{"id", "name", "email", "phone", "company", "value", "source", "status", "score", "assignedToId",
		"contactId", "dealId", "createdAt", "updatedAt"},
	Filters: []string{"status", "assignedToId", "q"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		return Containing(Equal(Equal(q.Model(&Lead{}), "status", f["status"]), "assigned_to_id", f["assignedToId"]), f["q"], "name", "email", "company")
	},
}

func writeLeads(w *importWriter, rows []ImportRow) error {
	members, err := w.members(valuesOf(rows, "assignedToId"))
	if err != nil {
		return err
	}
	var taken []string
	if err := w.tx.Model(&Lead{}).Where("org_id = ? AND email IN ?", w.imp.OrgID, valuesOf(rows, "email")).Pluck("email", &taken).Error; err != nil {
		return err
	}
	emailTaken := map[string]bool{}
	for _, e := range taken {
		emailTaken[e] = true
	}
	var leads []*Lead
	for i := range rows {
		r := &rows[i]
		var bad []FieldError
		if r.Values["name"] == "" && r.Values["email"] == "" && r.Values["phone"] == "" {
			bad = append(bad, FieldError{Field: "email", Code: "required_without", Message: "A lead needs at least a name, an e-mail address or a phone number."})
		}
		if e := r.Values["email"]; e != "" && emailTaken[e] {
			bad = append(bad, FieldError{Field: "email", Code: "duplicate_lead", Message: "A lead with this e-mail address exists."})
		}
		if id := r.Values["assignedToId"]; id != "" && !members[id] {
			bad = append(bad, FieldError{Field: "assignedToId", Code: "not_a_member", Message: "Must be the id of a member of this organization."})
		}
		fields, fieldProblems, err := w.fields(r, nil, true)
		if err != nil {
			return err
		}
		if bad = append(bad, fieldProblems...); len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, bad)
			continue
		}
		l := &Lead{ID: NewID(), OrgID: w.imp.OrgID, Name: r.Values["name"], Email: r.Values["email"], Phone: r.Values["phone"],
			Company: r.Values["company"], Source: "import", Status: LeadNew, CreatedBy: w.imp.CreatedBy, CreatedAt: w.createdAt(r),
			UpdatedAt: w.now, Fields: fields}
		setCell(&l.Source, r, "source")
		setCell(&l.Status, r, "status")
		l.Value, _ = strconv.ParseFloat(r.Values["value"], 64)
		if id := r.Values["assignedToId"]; id != "" {
			l.AssignedToID = &id
		}
		score := Score(ScoreInput{Email: l.Email, Phone: l.Phone, Company: l.Company, Source: l.Source, Value: l.Value, Now: w.now, Status: l.Status})
		l.Score, l.Probability, l.ScoreFactors = score.Score, score.Probability, score.FactorsJSON()
		if l.Email != "" {
			emailTaken[l.Email] = true
		}
		leads = append(leads, l)
		w.batch.Progress.Created++
	}
	if len(leads) == 0 {
		return nil
	}
	return w.tx.CreateInBatches(leads, importInsertBatch).Error
}
