package models_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// FindAll reads what GORM's Find reads: named columns (column:last4),
// embedded structs, NULL and set pointers, numbers, Actor — and drops a
// column its type has no field for.
func TestFindAllScansAsFind(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := billingOrg(t, db, models.PlanFree, 1, 0, false)
		now := models.Now()
		var assignee string
		if err := db.Model(&models.Member{}).Where("org_id = ? AND status = ?", orgID, models.MemberActive).Limit(1).Pluck("id", &assignee).Error; err != nil {
			t.Fatal(err)
		}
		later := now.Add(90)
		leads := []models.Lead{
			{ID: models.NewID(), OrgID: orgID, Name: "Ada", Email: "ada@example.com", Value: 1234.5, Score: 71, Probability: 0.25,
				ScoreFactors: `[{"f":1}]`, AssignedToID: &assignee, LastActivityAt: &later, CreatedBy: models.ActorIntake, CreatedAt: now, UpdatedAt: now},
			{ID: models.NewID(), OrgID: orgID, Name: "Bob", CreatedBy: models.MemberActor("m-2"), CreatedAt: now, UpdatedAt: now},
		}
		keys := []models.APIKey{
			{ID: models.NewID(), OrgID: orgID, Name: "k", Service: "crm", Prefix: "crm_", Last4: "wxyz", Hash: "h", CreatedBy: "u", CreatedAt: now, RevokedAt: &later},
		}
		changes := []models.SubscriptionChange{
			{ID: models.NewID(), OrgID: orgID, Kind: "create", FromPlan: "free", ToPlan: "business", Interval: "month", Status: "pending",
				Attempts: 2, StripeRefs: models.StripeRefs{StripeCustomerID: "cus_1", StripeInvoiceID: "in_1"}, EffectiveAt: &later, CreatedAt: now, UpdatedAt: now},
		}
		for _, rows := range []any{&leads, &keys, &changes} {
			if err := db.Create(rows).Error; err != nil {
				t.Fatal(err)
			}
		}
		sameAsFind[models.Lead](t, db.Model(&models.Lead{}).Where("org_id = ?", orgID).Order("name"))
		sameAsFind[models.APIKey](t, db.Model(&models.APIKey{}).Where("org_id = ?", orgID))
		sameAsFind[models.SubscriptionChange](t, db.Model(&models.SubscriptionChange{}).Where("org_id = ?", orgID))
		// A column with no field is read and dropped.
		sameAsFind[models.Lead](t, db.Model(&models.Lead{}).Select("leads.*, 42 AS extra").Where("org_id = ?", orgID).Order("name"))

		// Inside a transaction — a request's or a handler's own — FindAll
		// reads what the transaction has written.
		ctx, rt, err := models.BeginRequestTx(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.WithContext(ctx).Create(&models.Lead{ID: models.NewID(), OrgID: orgID, Name: "Cy", CreatedBy: models.ActorIntake, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		if got, err := models.FindAll[models.Lead](db.WithContext(ctx).Model(&models.Lead{}).Where("org_id = ?", orgID)); err != nil || len(got) != 3 {
			t.Fatalf("in the request transaction: %d leads, %v; want 3", len(got), err)
		}
		rt.Rollback()
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&models.Lead{ID: models.NewID(), OrgID: orgID, Name: "Di", CreatedBy: models.ActorIntake, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
				return err
			}
			got, err := models.FindAll[models.Lead](tx.Model(&models.Lead{}).Where("org_id = ?", orgID))
			if err == nil && len(got) != 3 { // Ada, Bob and Di (Cy was rolled back)
				return fmt.Errorf("in a transaction: %d leads, want 3", len(got))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// FindAllInto reads into the array of the slice it is given when it has
// room for the statement's LIMIT, and the rows are only what the statement
// returned: nothing of what the slice held before shows through.
func TestFindAllIntoReusesTheArray(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := billingOrg(t, db, models.PlanFree, 1, 0, false)
		now := models.Now()
		for i, name := range []string{"Ada", "Bob"} {
			lead := models.Lead{ID: models.NewID(), OrgID: orgID, Name: name, CreatedBy: models.ActorIntake, CreatedAt: now.Add(time.Duration(i)), UpdatedAt: now}
			if err := db.Create(&lead).Error; err != nil {
				t.Fatal(err)
			}
		}
		stale := make([]models.Lead, 5, 10)
		for i := range stale {
			stale[i] = models.Lead{ID: fmt.Sprint("stale-", i), Name: "Stale"}
		}
		q := func(limit int) *gorm.DB {
			return db.Model(&models.Lead{}).Where("org_id = ?", orgID).Order("created_at").Limit(limit)
		}
		got, err := models.FindAllInto(q(10), stale)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Name != "Ada" || got[1].Name != "Bob" {
			t.Fatalf("FindAllInto read %+v, want Ada and Bob only", got)
		}
		if &got[0] != &stale[0] {
			t.Error("FindAllInto allocated new rows although the slice had room for 10")
		}
		// No rows, and no LIMIT to allocate ahead for: an empty list, as Find reads.
		if none, err := models.FindAll[models.Lead](db.Model(&models.Lead{}).Where("org_id = ?", models.NewID())); err != nil || none == nil || len(none) != 0 {
			t.Fatalf("no rows: %#v, %v; want an empty slice", none, err)
		}
		// Without room for the LIMIT, a new array; the one given is left as it was.
		got, err = models.FindAllInto(q(20), stale)
		if err != nil || len(got) != 2 || &got[0] == &stale[0] {
			t.Fatalf("with a LIMIT of 20: %d rows, same array %v, %v", len(got), len(got) > 0 && &got[0] == &stale[0], err)
		}
	})
}

// On PostgreSQL FindAll decodes the common column types itself
// (pgdecode.go): it reads what GORM's Find (pgx's own scan) reads, edge
// values included, and fails where Find fails.
func TestFindAllDecodesAsPgx(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	db := dbtest.Open(t, models.Postgres)
	type row struct {
		Text, Varchar, Char, ID string
		At                      time.Time
		Flag                    bool
		Big                     int64
		Int                     int
		Small                   int16
		Int32                   int32
		Float, Num              float64
		Maybe                   *string
		When                    *time.Time
		By                      models.Actor
	}
	sameAsFind[row](t, db.Raw(`SELECT * FROM (VALUES
		('ünï ✓'::text, 'v'::varchar(5), 'c'::char(3), '6f1c2a3b-4d5e-4f60-8172-839405a6b7c8'::uuid, '2026-11-26 12:00:00.123456+00'::timestamptz,
			true, 9223372036854775807::bigint, (-2147483648)::integer, (-32768)::smallint, 2147483647::integer, -1.5e300::double precision,
			1234.56::numeric(14,2), NULL::text, NULL::timestamptz, 'intake'),
		('', '', '', '00000000-0000-0000-0000-000000000000', '0001-01-01 00:00:00+00', false, -1, 0, 0, 0, 0, 0, 'x',
			'1999-12-31 23:59:59.999999+00', ''),
		('a', 'b', 'c', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', '1969-12-31 23:59:59.5+00', true, 0, 1, 1, 1, 0.1, -0.01, '',
			'294276-12-31 23:59:59.999999+00', 'member:m')
	) AS v(text, varchar, char, id, at, flag, big, int, small, int32, float, num, maybe, "when", by) ORDER BY big`))

	// Strings share blocks (textArena): many rows, and strings longer than
	// a block, read back whole.
	sameAsFind[row](t, db.Raw(`SELECT md5(g::text) || repeat('y', g * 300) AS text, md5(g::text)::uuid AS id, g AS big
		FROM generate_series(1, 60) AS g ORDER BY g`))

	// What pgx refuses, FindAll refuses, decoded by itself or not. (GORM's
	// Find leaves a NULL in a field that is not a pointer at its zero value;
	// FindAll, as pgx, does not: the schema and the model disagree.)
	for name, query := range map[string]string{
		"infinity":            `SELECT 'infinity'::timestamptz AS at`,
		"NULL into a string":  `SELECT NULL::text AS text`,
		"bigint into int16":   `SELECT 70000::bigint AS small`,
		"NULL into a time":    `SELECT NULL::timestamptz AS at`,
		"text into a time":    `SELECT 'soon'::text AS at`,
		"bool into a integer": `SELECT true AS int`,
	} {
		if _, err := models.FindAll[row](db.Raw(query)); err == nil {
			t.Errorf("%s: FindAll read it", name)
		}
	}
}

// A plan is cached per column list, whatever the names hold: a column
// named "name,email" is not the two columns name and email.
func TestFindAllPlansPerColumnList(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		type pair struct{ Name, Email string }
		if got, err := models.FindAll[pair](db.Raw(`SELECT 'x' AS "name,email"`)); err != nil || len(got) != 1 || got[0] != (pair{}) {
			t.Fatalf("one column named name,email: %+v %v", got, err)
		}
		if got, err := models.FindAll[pair](db.Raw(`SELECT 'n' AS name, 'e' AS email`)); err != nil || len(got) != 1 || got[0] != (pair{"n", "e"}) {
			t.Fatalf("the columns name and email: %+v %v", got, err)
		}
	})
}

func sameAsFind[T any](t *testing.T, q *gorm.DB) {
	t.Helper()
	var want []T
	if err := q.Session(&gorm.Session{}).Find(&want).Error; err != nil {
		t.Fatal(err)
	}
	got, err := models.FindAll[T](q.Session(&gorm.Session{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("FindAll read\n%+v\nFind read\n%+v", got, want)
	}
}
