package database

import (
	"errors"
	"reflect"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/schema"
)

// Insert writes row, a pointer to a model, as db.Create(row) does, at a
// fraction of GORM's CPU. Create re-derives the statement for every row —
// the columns it may write, an INSERT clause, one bound variable at a
// time — which was 9 % of the suite's CPU under `POST /crm/contacts`, and
// nearly a third of the bytes that request allocated (docs/decisions.md,
// "Performance"). Insert takes the statement GORM wrote for the model's
// first row and only reads each later row's values, with GORM's own field
// accessors, setting a zero CreatedAt or UpdatedAt to now as Create does.
//
// It does so for a flat model: no hooks, associations or columns left to a
// database default (which Create leaves out of the INSERT when zero and
// reads back), on a plain handle (no Select, Omit, clauses or table of its
// own, no SQL logging). Any other model or handle goes through Create.
func Insert(db *gorm.DB, row any) error {
	if !plainHandle(db) {
		return db.Create(row).Error
	}
	plan, err := insertPlanFor(db, reflect.TypeOf(row))
	if err != nil {
		return err
	}
	if plan == nil {
		return db.Create(row).Error
	}
	ctx := db.Statement.Context
	rv := reflect.ValueOf(row).Elem()
	args := make([]any, len(plan.fields))
	var now time.Time // Create's one time for every field it sets
	for i, f := range plan.fields {
		v, zero := f.ValueOf(ctx, rv)
		if zero && (f.AutoCreateTime > 0 || f.AutoUpdateTime > 0) {
			if now.IsZero() {
				now = db.NowFunc()
			}
			if err := f.Set(ctx, rv, now); err != nil {
				return err
			}
			v, _ = f.ValueOf(ctx, rv)
		}
		args[i] = v
	}
	if _, err := db.Statement.ConnPool.ExecContext(ctx, plan.sql, args...); err != nil {
		if translator, ok := db.Dialector.(gorm.ErrorTranslator); ok && db.TranslateError {
			return translator.Translate(err)
		}
		return err
	}
	return nil
}

// plainHandle tells whether db carries nothing that would change Create's
// statement or its logging.
func plainHandle(db *gorm.DB) bool {
	s := db.Statement
	return db.Error == nil && !db.DryRun && db.Logger == logger.Discard && s.Table == "" && s.TableExpr == nil &&
		len(s.Selects) == 0 && len(s.Omits) == 0 && len(s.Clauses) == 0 && s.Model == nil
}

// insertPlan is a flat model's INSERT, as GORM writes it, and the fields
// whose values it takes, in order.
type insertPlan struct {
	sql    string
	fields []*schema.Field
}

type insertPlanKey struct {
	row     reflect.Type
	dialect string
}

// insertPlans caches, per row type and dialect, its *insertPlan (nil: the
// model is not flat).
var insertPlans sync.Map

func insertPlanFor(db *gorm.DB, rowType reflect.Type) (*insertPlan, error) {
	key := insertPlanKey{row: rowType, dialect: db.Dialector.Name()}
	if plan, ok := insertPlans.Load(key); ok {
		return plan.(*insertPlan), nil
	}
	if rowType.Kind() != reflect.Pointer || rowType.Elem().Kind() != reflect.Struct {
		return nil, errors.New("models.Insert: row must be a pointer to a struct")
	}
	plan, err := newInsertPlan(db, rowType.Elem())
	if err != nil {
		return nil, err
	}
	insertPlans.Store(key, plan)
	return plan, nil
}

func newInsertPlan(db *gorm.DB, model reflect.Type) (*insertPlan, error) {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(reflect.New(model).Interface()); err != nil {
		return nil, err
	}
	s := stmt.Schema
	if s.BeforeCreate || s.AfterCreate || s.BeforeSave || s.AfterSave ||
		len(s.Relationships.Relations) > 0 || len(s.FieldsWithDefaultDBValue) > 0 {
		return nil, nil
	}
	plan := &insertPlan{}
	for _, name := range s.DBNames {
		f := s.FieldsByDBName[name]
		if f.HasDefaultValue || !f.Creatable {
			return nil, nil
		}
		plan.fields = append(plan.fields, f)
	}
	// The statement is the one Create writes, taken from a dry run of it.
	dry := db.Session(&gorm.Session{DryRun: true, NewDB: true}).Create(reflect.New(model).Interface())
	if dry.Error != nil {
		return nil, dry.Error
	}
	if len(dry.Statement.Vars) != len(plan.fields) {
		return nil, nil // Create writes other columns than these: leave it to Create
	}
	plan.sql = dry.Statement.SQL.String()
	return plan, nil
}
