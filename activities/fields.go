package activities

import (
	"cmp"
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
// definition; or the removed options of a select taken out of them.
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
	return f.rewriteBatch(ctx, in, func(tx *gorm.DB, table string, ids []string) (int64, error) {
		remove := "fields - CAST(? AS text)"
		has := "fields ->> CAST(? AS text) IS NOT NULL"
		arg := in.Key
		if database.DialectFor(tx) == database.SQLite {
			remove, has, arg = "json_remove(fields, ?)", "json_type(fields, ?) IS NOT NULL", "$."+in.Key
		}
		res := tx.Table(table).Where("id IN ? AND "+has, ids, arg).Update("fields", gorm.Expr(remove, arg))
		return res.RowsAffected, res.Error
	})
}

// RemoveOptionsBatch takes the removed options (in.Options) out of the
// field's values in the next batch of objects: a select holding one loses
// its value, a multiselect the option (its other options stay). Like
// RemoveFieldBatch, one transaction with the progress, and idempotent: a
// value without the options is left alone.
func (f *Fields) RemoveOptionsBatch(ctx context.Context, in models.FieldChangeInput) (FieldBatch, error) {
	return f.rewriteBatch(ctx, in, func(tx *gorm.DB, table string, ids []string) (int64, error) {
		var field models.CustomField
		if err := tx.Take(&field, "id = ? AND org_id = ?", in.FieldID, in.OrgID).Error; err != nil {
			return 0, err
		}
		sqlite := database.DialectFor(tx) == database.SQLite
		path := "$." + in.Key
		var rewritten int64
		for _, option := range in.Options {
			var res *gorm.DB
			q := tx.Table(table).Where("id IN ?", ids)
			switch {
			case field.Type != models.FieldMultiSelect && sqlite:
				res = q.Where("json_extract(fields, ?) = ?", path, option).Update("fields", gorm.Expr("json_remove(fields, ?)", path))
			case field.Type != models.FieldMultiSelect:
				res = q.Where("fields ->> CAST(? AS text) = ?", in.Key, option).Update("fields", gorm.Expr("fields - CAST(? AS text)", in.Key))
			case sqlite:
				res = q.Where("EXISTS (SELECT 1 FROM json_each(fields, ?) WHERE value = ?)", path, option).
					Update("fields", gorm.Expr("json_set(fields, ?, json((SELECT json_group_array(value) FROM json_each(fields, ?) WHERE value <> ?)))",
						path, path, option))
			default:
				res = q.Where("fields -> CAST(? AS text) @> to_jsonb(CAST(? AS text))", in.Key, option).
					Update("fields", gorm.Expr("jsonb_set(fields, ARRAY[CAST(? AS text)], (fields -> CAST(? AS text)) - CAST(? AS text))",
						in.Key, in.Key, option))
			}
			if res.Error != nil {
				return 0, res.Error
			}
			rewritten += res.RowsAffected
		}
		return rewritten, nil
	})
}

// rewriteBatch rewrites the next batch of the organization's objects (by
// id, after in.After) with rewrite, in one transaction that also records
// the change's progress on the definition.
func (f *Fields) rewriteBatch(ctx context.Context, in models.FieldChangeInput,
	rewrite func(tx *gorm.DB, table string, ids []string) (int64, error)) (FieldBatch, error) {
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
		n, err := rewrite(tx, table, ids)
		if err != nil {
			return err
		}
		out.Rewritten = int(n)
		progress, _ := json.Marshal(models.FieldProgress{Change: cmp.Or(in.Change, models.FieldChangeDelete), Rewritten: in.Rewritten + out.Rewritten,
			Options: in.Options})
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

// FinishOptionsChange records that the removal of in.Options has ended.
func (f *Fields) FinishOptionsChange(ctx context.Context, in models.FieldChangeInput) error {
	progress, _ := json.Marshal(models.FieldProgress{Change: models.FieldChangeRemoveOptions, Rewritten: in.Rewritten, Options: in.Options, Done: true})
	return f.DB.WithContext(ctx).Model(&models.CustomField{}).Where("id = ? AND org_id = ?", in.FieldID, in.OrgID).
		Update("progress", string(progress)).Error
}
