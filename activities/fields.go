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
// definition; the removed options of a select taken out of them; or the
// values of a field whose type changed converted to it.
type Fields struct {
	DB *gorm.DB
}

// FieldBatch is what one batch did: the last object it looked at (the
// next starts after it), how many it rewrote, and whether none are left.
type FieldBatch struct {
	Last      string `json:"last"`
	Rewritten int    `json:"rewritten"`
	Cleared   int    `json:"cleared,omitempty"`
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
	return f.rewriteBatch(ctx, in, func(tx *gorm.DB, _ *models.CustomField, table string, ids []string) (FieldBatch, error) {
		remove := "fields - CAST(? AS text)"
		has := "fields ->> CAST(? AS text) IS NOT NULL"
		arg := in.Key
		if database.DialectFor(tx) == database.SQLite {
			remove, has, arg = "json_remove(fields, ?)", "json_type(fields, ?) IS NOT NULL", "$."+in.Key
		}
		res := tx.Table(table).Where("id IN ? AND "+has, ids, arg).Update("fields", gorm.Expr(remove, arg))
		return FieldBatch{Rewritten: int(res.RowsAffected)}, res.Error
	})
}

// RemoveOptionsBatch takes the removed options (in.Options) out of the
// field's values in the next batch of objects: a select holding one loses
// its value, a multiselect the option (its other options stay). Like
// RemoveFieldBatch, one transaction with the progress, and idempotent: a
// value without the options is left alone.
func (f *Fields) RemoveOptionsBatch(ctx context.Context, in models.FieldChangeInput) (FieldBatch, error) {
	return f.rewriteBatch(ctx, in, func(tx *gorm.DB, field *models.CustomField, table string, ids []string) (FieldBatch, error) {
		sqlite := database.DialectFor(tx) == database.SQLite
		path := "$." + in.Key
		var out FieldBatch
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
				return out, res.Error
			}
			out.Rewritten += int(res.RowsAffected)
		}
		return out, nil
	})
}

// ConvertBatch turns the field's values in the next batch of objects into
// values of its new type (models.CustomField.Convert), clearing each that
// no reading of fits. The batch's rows are locked while it reads and
// rewrites them, and only the field's key is written, so an update of the
// object's other fields meanwhile is kept. Idempotent like the others: a
// value that already is of the new type is left alone.
func (f *Fields) ConvertBatch(ctx context.Context, in models.FieldChangeInput) (FieldBatch, error) {
	return f.rewriteBatch(ctx, in, func(tx *gorm.DB, field *models.CustomField, table string, ids []string) (FieldBatch, error) {
		var rows []struct {
			ID     string
			Fields models.FieldValues
		}
		if err := models.LockForUpdate(tx).Table(table).Select("id, fields").Where("id IN ?", ids).Find(&rows).Error; err != nil {
			return FieldBatch{}, err
		}
		sqlite := database.DialectFor(tx) == database.SQLite
		var out FieldBatch
		for _, row := range rows {
			old, ok := row.Fields[in.Key]
			if !ok {
				continue
			}
			value, fits := field.Convert(old)
			if fits && (models.FieldValues{"v": value}).Equal(models.FieldValues{"v": old}) {
				continue
			}
			expr := gorm.Expr("fields - CAST(? AS text)", in.Key)
			switch {
			case !fits && sqlite:
				expr = gorm.Expr("json_remove(fields, ?)", "$."+in.Key)
			case sqlite:
				expr = gorm.Expr("json_set(fields, ?, json(?))", "$."+in.Key, jsonText(value))
			case fits:
				expr = gorm.Expr("jsonb_set(fields, ARRAY[CAST(? AS text)], CAST(? AS jsonb))", in.Key, jsonText(value))
			}
			if err := tx.Table(table).Where("id = ?", row.ID).Update("fields", expr).Error; err != nil {
				return out, err
			}
			out.Rewritten++
			if !fits {
				out.Cleared++
			}
		}
		return out, nil
	})
}

// jsonText is v as JSON text.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// rewriteBatch rewrites the next batch of the organization's objects (by
// id, after in.After) with rewrite, given the field's definition, in one
// transaction that also records the change's progress on the definition.
func (f *Fields) rewriteBatch(ctx context.Context, in models.FieldChangeInput,
	rewrite func(tx *gorm.DB, field *models.CustomField, table string, ids []string) (FieldBatch, error)) (FieldBatch, error) {
	table, ok := fieldTables[in.Object]
	if !ok {
		return FieldBatch{}, temporal.NewNonRetryableApplicationError("no custom fields on "+in.Object, ErrTypeBadPayload, nil)
	}
	var out FieldBatch
	err := f.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var field models.CustomField
		if err := tx.Take(&field, "id = ? AND org_id = ?", in.FieldID, in.OrgID).Error; err != nil {
			return err
		}
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
		done, err := rewrite(tx, &field, table, ids)
		if err != nil {
			return err
		}
		out.Last, out.Rewritten, out.Cleared = ids[len(ids)-1], done.Rewritten, done.Cleared
		return tx.Model(&field).Update("progress", in.Progress(in.Rewritten+out.Rewritten, in.Cleared+out.Cleared, field.Type, false)).Error
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

// FinishOptionsChange records that the removal of in.Options, or the
// conversion of the values to the field's new type, has ended.
func (f *Fields) FinishOptionsChange(ctx context.Context, in models.FieldChangeInput) error {
	return f.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var field models.CustomField
		if err := tx.Take(&field, "id = ? AND org_id = ?", in.FieldID, in.OrgID).Error; err != nil {
			return err
		}
		return tx.Model(&field).Update("progress", in.Progress(in.Rewritten, in.Cleared, field.Type, true)).Error
	})
}
