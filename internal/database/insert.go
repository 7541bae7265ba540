package database

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
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
	args, err := plan.values(db, row, 0)
	if err != nil {
		return err
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

// values are row's values of the plan's columns, with room for extra
// more; a zero CreatedAt or UpdatedAt is set to now first, as Create does.
func (plan *insertPlan) values(db *gorm.DB, row any, extra int) ([]any, error) {
	ctx := db.Statement.Context
	rv := reflect.ValueOf(row).Elem()
	args := make([]any, len(plan.fields), len(plan.fields)+extra)
	var now time.Time // Create's one time for every field it sets
	for i, f := range plan.fields {
		v, zero := f.ValueOf(ctx, rv)
		if zero && (f.AutoCreateTime > 0 || f.AutoUpdateTime > 0) {
			if now.IsZero() {
				now = db.NowFunc()
			}
			if err := f.Set(ctx, rv, now); err != nil {
				return nil, err
			}
			v, _ = f.ValueOf(ctx, rv)
		}
		args[i] = v
	}
	return args, nil
}

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

// InsertUnless writes row, as Insert does, in one statement that first
// asks the database whether the query exists (a SELECT whose parameters
// are args) finds a row, and writes nothing when it does:
//
//	INSERT INTO t (columns) SELECT values WHERE NOT EXISTS (exists)
//
// It reports whether it wrote row. The contact create uses it to stay one
// statement for an organization without webhook endpoints, and to learn
// in that statement whether it has any (docs/decisions.md, "Outbound
// webhooks"). The model must be flat, as Insert's fast path needs.
func InsertUnless(db *gorm.DB, row any, exists string, args ...any) (bool, error) {
	if db.Error != nil {
		return false, db.Error
	}
	plan, err := insertPlanFor(db, reflect.TypeOf(row))
	if err != nil {
		return false, err
	}
	if plan == nil {
		return false, fmt.Errorf("database.InsertUnless: %s is not a flat model", reflect.TypeOf(row))
	}
	statement, err := guardedInsert(db, plan, exists, len(args))
	if err != nil {
		return false, err
	}
	values, err := plan.values(db, row, len(args))
	if err != nil {
		return false, err
	}
	res, err := db.Statement.ConnPool.ExecContext(db.Statement.Context, statement, append(values, args...)...)
	if err != nil {
		if translator, ok := db.Dialector.(gorm.ErrorTranslator); ok && db.TranslateError {
			return false, translator.Translate(err)
		}
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

type guardedInsertKey struct {
	plan   *insertPlan
	exists string
}

// guardedInserts caches InsertUnless's statements by plan and guard.
var guardedInserts sync.Map

// guardedInsert is plan's INSERT with its VALUES turned into a SELECT
// guarded by NOT EXISTS (exists), its parameters written as the dialect
// writes them (PostgreSQL numbers them).
func guardedInsert(db *gorm.DB, plan *insertPlan, exists string, nargs int) (string, error) {
	key := guardedInsertKey{plan: plan, exists: exists}
	if s, ok := guardedInserts.Load(key); ok {
		return s.(string), nil
	}
	head, _, found := strings.Cut(plan.sql, " VALUES ")
	if !found {
		return "", fmt.Errorf("database.InsertUnless: unexpected INSERT %q", plan.sql)
	}
	n := len(plan.fields) + nargs
	placeholders := make([]any, n)
	for i := range placeholders {
		placeholders[i] = i
	}
	raw := head + " SELECT " + strings.TrimSuffix(strings.Repeat("?,", len(plan.fields)), ",") +
		" WHERE NOT EXISTS (" + exists + ")"
	dry := db.Session(&gorm.Session{DryRun: true, NewDB: true}).Exec(raw, placeholders...)
	if dry.Error != nil {
		return "", dry.Error
	}
	if len(dry.Statement.Vars) != n {
		return "", fmt.Errorf("database.InsertUnless: %q takes %d parameters, not %d", exists, len(dry.Statement.Vars)-len(plan.fields), nargs)
	}
	s := dry.Statement.SQL.String()
	guardedInserts.Store(key, s)
	return s, nil
}
