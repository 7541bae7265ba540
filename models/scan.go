package models

import (
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// FindAll runs q — built with GORM as usual (Model, Where, Order, Limit) —
// and scans its rows into a []T, as q.Find(&rows) would, at a fraction of
// the CPU. GORM's Find sets every field of every row through reflection
// and a pool of intermediate values: under load, setting a 26-row page's
// fields took 44 % of a list request's handler time (docs/decisions.md,
// "Performance"). FindAll maps the result's columns to T's fields once per
// column list and then hands database/sql pointers straight into each row.
//
// Columns are matched to fields by GORM's own schema of T (column names,
// embedded structs); a column T has no field for is read and dropped, as
// Find drops it. T's fields must be types database/sql scans into (strings,
// numbers, bools, times, pointers to them, sql.Scanner) — true of every
// model here, none of which uses GORM serializers. Unlike Find, which
// leaves a field at its zero value for a NULL, FindAll refuses a NULL in a
// field that is not a pointer (as database/sql and pgx do): a nullable
// column belongs in a pointer field.
//
// On PostgreSQL, outside transactions, the rows are read with pgx itself
// (findAllPgx).
func FindAll[T any](q *gorm.DB) ([]T, error) {
	return FindAllInto[T](q, nil)
}

// FindAllInto is FindAll putting the rows in dst's array when it has room
// for them (the statement's LIMIT), for a caller that recycles the slices
// of rows it is done with. The rows are dst[:n]: what dst held before is
// overwritten.
func FindAllInto[T any](q *gorm.DB, dst []T) ([]T, error) {
	if q.DryRun { // db.ToSQL: build the statement Find would run, run nothing
		var rows []T
		return rows, q.Find(&rows).Error
	}
	dst = slices.Grow(dst[:0], limitOf(q))
	if dst == nil {
		dst = []T{} // as Find: no rows is an empty list, not nil
	}
	if pool, ok := onPostgresPool(q); ok {
		return findAllPgx[T](q, pool, dst)
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	fields, err := scanPlan[T](q, cols)
	if err != nil {
		return nil, err
	}
	out, err := collectRows[T](fields, dst, rows)
	if err != nil {
		return nil, err
	}
	return out, rows.Err()
}

// collectRows scans every row into a new T appended to out, each column
// into the field fields names for it; a column without one is read and
// dropped. out has room for the rows expected (the statement's LIMIT), so
// that the page is allocated once rather than grown.
func collectRows[T any](fields []scanField, out []T, rows *sql.Rows) ([]T, error) {
	dest := make([]any, len(fields))
	var skip any
	for rows.Next() {
		var zero T
		out = append(out, zero)
		row := unsafe.Pointer(&out[len(out)-1])
		for i, f := range fields {
			if f.typ == nil {
				dest[i] = &skip
			} else {
				dest[i] = reflect.NewAt(f.typ, unsafe.Add(row, f.offset)).Interface()
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
	}
	return out, nil
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
	if l, ok := c.Expression.(clause.Limit); ok && l.Limit != nil && *l.Limit > 0 && *l.Limit <= maxSizeHint {
		return *l.Limit
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

// onPostgresPool returns q's connection pool when q runs on PostgreSQL
// outside any transaction (neither its own nor the request's).
func onPostgresPool(q *gorm.DB) (*txRouter, bool) {
	router, ok := q.Statement.ConnPool.(*txRouter)
	if !ok || q.Dialector.Name() != "postgres" {
		return nil, false
	}
	if _, inRequestTx := q.Statement.Context.Value(requestTxKey{}).(*RequestTx); inRequestTx {
		return nil, false
	}
	return router, true
}

// findAllPgx is FindAll reading the rows with pgx's own Query on one of
// the pool's connections. database/sql turns every column into a
// driver.Value first (a boxed copy of each string) and converts it again
// into the destination; here each column is decoded straight into its
// field (collectPgxRows). On a 25-row list page that conversion was a
// fifth of the request's CPU (docs/decisions.md, "Performance"). The
// statement is the one Find would run, built by GORM. It takes its turn on
// the pool (admission) until its rows are read.
func findAllPgx[T any](q *gorm.DB, pool *txRouter, dst []T) ([]T, error) {
	var built []T
	stmt := q.Session(&gorm.Session{DryRun: true}).Find(&built).Statement
	if stmt.Error != nil {
		return nil, stmt.Error
	}
	ctx := stmt.Context
	admitted, err := pool.turns.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer pool.turns.leave(admitted)
	conn, err := pool.db.Conn(ctx)
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
