package database

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// FindAll runs q — built with GORM as usual (Model, Where, Order, Limit) —
// and returns its rows as a []T, as q.Find(&rows) would. On PostgreSQL,
// outside transactions (every list a GET serves), it reads them with pgx
// itself at a fraction of Find's CPU (findAllPgx); anywhere else it is
// Find.
//
// Why: GORM's Find sets every field of every row through reflection and a
// pool of intermediate values, and database/sql turns every column into a
// boxed driver.Value before converting it again. Under load, setting a
// 26-row page's fields took 44 % of a list request's handler time, and
// database/sql's conversions a fifth of its CPU (docs/decisions.md,
// "Performance"). FindAll maps the result's columns to T's fields once
// per column list and decodes each column straight into its field.
//
// Columns are matched to fields by GORM's own schema of T (column names,
// embedded structs); a column T has no field for is read and dropped, and
// a NULL leaves a field that is not a pointer or a Scanner at its zero
// value — both as Find does (TestFindAllScansAsFind). None of the models
// uses GORM serializers, which FindAll does not know.
func FindAll[T any](q *gorm.DB) ([]T, error) {
	return FindAllInto[T](q, nil)
}

// FindAllInto is FindAll putting the rows in dst's array when it has room
// for them (the statement's LIMIT), for a caller that recycles the slices
// of rows it is done with (buffers.go). The rows are dst[:n]: what dst
// held before is overwritten.
func FindAllInto[T any](q *gorm.DB, dst []T) ([]T, error) {
	p, onPool := q.Statement.ConnPool.(*pool)
	if !onPool || q.DryRun || q.Dialector.Name() != "postgres" {
		var rows []T
		if err := q.Find(&rows).Error; err != nil {
			return nil, err
		}
		if rows == nil {
			rows = []T{} // no rows is an empty list, not nil
		}
		return rows, nil
	}
	dst = slices.Grow(dst[:0], limitOf(q))
	if dst == nil {
		dst = []T{}
	}
	return findAllPgx[T](q, p, dst)
}

// scanField is where a column goes in the row: the field's type and its
// byte offset in T (through embedded structs, whose offsets add up). A
// pointer made from them is what row.FieldByIndex(index).Addr() gives,
// without walking the index for every column of every row.
type scanField struct {
	typ    reflect.Type // nil: T has no field for the column
	offset uintptr
}

// maxSizeHint bounds the rows FindAll allocates ahead.
const maxSizeHint = 1000

// limitOf is q's LIMIT, for allocating the rows ahead (0 when it has none
// or an unusually large one).
func limitOf(q *gorm.DB) int {
	c, ok := q.Statement.Clauses["LIMIT"]
	if !ok {
		return 0
	}
	n := 0
	switch l := c.Expression.(type) {
	case literalLimit:
		n = int(l)
	case clause.Limit:
		if l.Limit != nil {
			n = *l.Limit
		}
	}
	if n > 0 && n <= maxSizeHint {
		return n
	}
	return 0
}

// scanPlans caches, per row type and column list, where each column goes
// in the row.
var scanPlans sync.Map // scanPlanKey → []scanField

type scanPlanKey struct {
	row  reflect.Type
	cols string
}

func scanPlan[T any](q *gorm.DB, cols []string) ([]scanField, error) {
	// NUL, which no column name can hold: a column aliased "a,b" and the
	// two columns a and b must not share a plan.
	key := scanPlanKey{row: reflect.TypeFor[T](), cols: strings.Join(cols, "\x00")}
	if plan, ok := scanPlans.Load(key); ok {
		return plan.([]scanField), nil
	}
	stmt := &gorm.Statement{DB: q}
	if err := stmt.Parse(new(T)); err != nil {
		return nil, fmt.Errorf("scan into %s: %w", key.row, err)
	}
	s := stmt.Schema
	plan := make([]scanField, len(cols))
	for i, col := range cols {
		f := s.LookUpField(col)
		if f == nil {
			continue
		}
		if slices.ContainsFunc(f.StructField.Index, func(i int) bool { return i < 0 }) {
			// GORM marks a field of an embedded *struct with a negative index.
			return nil, fmt.Errorf("scan into %s: column %s is in an embedded pointer, which FindAll does not allocate", key.row, col)
		}
		t := key.row
		for _, j := range f.StructField.Index {
			sf := t.Field(j)
			plan[i].offset += sf.Offset
			t = sf.Type
		}
		plan[i].typ = t
	}
	scanPlans.Store(key, plan)
	return plan, nil
}

// findAllPgx is FindAll reading the rows with pgx's own Query on one of
// the pool's connections. database/sql turns every column into a
// driver.Value first (a boxed copy of each string) and converts it again
// into the destination; here each column is decoded straight into its
// field (collectPgxRows). On a 25-row list page that conversion was a
// fifth of the request's CPU (docs/decisions.md, "Performance"). The
// statement is the one Find would run, built by GORM. It takes its turn on
// the pool (admission) until its rows are read.
func findAllPgx[T any](q *gorm.DB, p *pool, dst []T) ([]T, error) {
	var built []T
	stmt := q.Session(&gorm.Session{DryRun: true}).Find(&built).Statement
	if stmt.Error != nil {
		return nil, stmt.Error
	}
	ctx := stmt.Context
	admitted, err := p.turns.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer p.turns.leave(admitted)
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []T
	err = conn.Raw(func(driverConn any) error {
		pc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("FindAll: a PostgreSQL connection of type %T, not pgx's", driverConn)
		}
		rows, err := pc.Conn().Query(ctx, stmt.SQL.String(), stmt.Vars...)
		if err != nil {
			return err
		}
		defer rows.Close()
		descs := rows.FieldDescriptions()
		cols := make([]string, len(descs))
		for i, d := range descs {
			cols[i] = d.Name
		}
		fields, err := scanPlan[T](q, cols)
		if err != nil {
			return err
		}
		if out, err = collectPgxRows[T](fields, dst, rows, pc.Conn().TypeMap()); err != nil {
			return err
		}
		return rows.Err()
	})
	return out, err
}
