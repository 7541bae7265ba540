package database

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// InsertUnless writes row, a pointer to a flat model, in one statement
// that first asks the database whether the query exists (a SELECT whose
// parameters are args) finds a row, and writes nothing when it does:
//
//	INSERT INTO t (columns) SELECT values WHERE NOT EXISTS (exists)
//
// It reports whether it wrote row. The contact create uses it to stay one
// statement for an organization without webhook endpoints, and to learn
// in that statement whether it has any (docs/decisions.md, "Outbound
// webhooks"): without it the create is BEGIN, INSERT, the endpoints'
// SELECT and COMMIT, and `make bench`'s POST /crm/contacts fell from 0.66
// to 0.52 of the bare INSERT (its goal is 0.6).
//
// The statement is the one GORM's Create writes for the model, taken from
// a dry run of it once per model and dialect; each row's values are read
// with GORM's own field accessors, a zero CreatedAt or UpdatedAt set to
// now as Create does (TestInsertUnlessWritesWhatCreateWrites). A flat
// model has no hooks, associations or columns left to a database default
// (which Create leaves out of the INSERT when zero and reads back);
// InsertUnless refuses any other.
func InsertUnless(db *gorm.DB, row any, exists string, args ...any) (bool, error) {
	if db.Error != nil {
		return false, db.Error
	}
	plan, err := insertPlanFor(db, reflect.TypeOf(row))
	if err != nil {
		return false, err
	}
	if plan == nil {
		return false, fmt.Errorf("database.InsertUnless: %s is not a flat model (write it with Create)", reflect.TypeOf(row))
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
		return nil, errors.New("database.InsertUnless: row must be a pointer to a struct")
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
