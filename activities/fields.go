package activities

import (
	"context"
	"encoding/json"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// Fields are the activities of the FieldChange workflow: the stored
// values of a deleted custom field removed in batches, then its
// definition.
type Fields struct {
	DB *gorm.DB
}

// FieldBatch is what one batch did: the last object it looked at (the
// next starts after it), how many it rewrote, and whether none are left.
type FieldBatch struct {
	Last      string `json:"last"`
	Rewritten int    `json:"rewritten"`
	Done      bool   `json:"done"`
}

// FieldBatchSize is how many objects a batch reads.
const FieldBatchSize = 500

// fieldTables are the tables of the objects that take custom fields.
var fieldTables = map[string]string{
	models.AutomationContact: "contacts", models.AutomationDeal: "deals", models.AutomationLead: "leads",
	models.AutomationTicket: "tickets", models.AutomationCustomer: "customers",
}

// RemoveFieldBatch removes the field's value from the next batch of the
// organization's objects (by id, after in.After), in one transaction that
// also records the change's progress on the definition. Removing a key is
// idempotent: a batch retried after its commit (the worker died before
// the workflow had its result) changes nothing again, so no object is
// rewritten twice in effect and none is skipped.
func (f *Fields) RemoveFieldBatch(ctx context.Context, in models.FieldChangeInput) (FieldBatch, error) {
	table, ok := fieldTables[in.Object]
	if !ok {
		return FieldBatch{}, temporal.NewNonRetryableApplicationError("no custom fields on "+in.Object, ErrTypeBadPayload, nil)
	}
	var out FieldBatch
	err := f.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []string
		q := tx.Table(table).Where("org_id = ?", in.OrgID).Order("id").Limit(FieldBatchSize)
		if in.After != "" {
			q = q.Where("id > ?", in.After)
		}
		if err := q.Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			out.Done = true
			return nil
		}
		out.Last = ids[len(ids)-1]
		remove := "fields - CAST(? AS text)"
		has := "fields ->> CAST(? AS text) IS NOT NULL"
		arg := in.Key
		if database.DialectFor(tx) == database.SQLite {
			remove, has, arg = "json_remove(fields, ?)", "json_type(fields, ?) IS NOT NULL", "$."+in.Key
		}
		res := tx.Table(table).Where("id IN ? AND "+has, ids, arg).Update("fields", gorm.Expr(remove, arg))
		if res.Error != nil {
			return res.Error
		}
		out.Rewritten = int(res.RowsAffected)
		progress, _ := json.Marshal(models.FieldProgress{Change: "delete", Rewritten: in.Rewritten + out.Rewritten})
		return tx.Model(&models.CustomField{}).Where("id = ? AND org_id = ?", in.FieldID, in.OrgID).Update("progress", string(progress)).Error
	})
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, out.Last)
	}
	return out, err
}

// FinishFieldChange deletes the field's definition once its values are
// gone (one already gone is fine).
func (f *Fields) FinishFieldChange(ctx context.Context, in models.FieldChangeInput) error {
	return f.DB.WithContext(ctx).Where("id = ? AND org_id = ? AND status = ?", in.FieldID, in.OrgID, models.FieldDeleting).
		Delete(&models.CustomField{}).Error
}
