package database_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// FindAll reads what GORM's Find reads: named columns (column:last4),
// embedded structs, NULL and set pointers, numbers, Actor — and drops a
// column its type has no field for.
func TestFindAllScansAsFind(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := seedOrg(t, db)
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

		// A NULL leaves a field that is not a pointer at its zero value, as
		// Find leaves it: a nullable column reads the same on a page as on
		// its own.
		sameAsFind[models.Lead](t, db.Model(&models.Lead{}).
			Select("id, org_id, NULL AS name, NULL AS score, NULL AS value, NULL AS created_at, NULL AS assigned_to_id").
			Where("org_id = ?", orgID).Order("id"))

		// Inside a transaction FindAll reads what the transaction has written.
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&models.Lead{ID: models.NewID(), OrgID: orgID, Name: "Di", CreatedBy: models.ActorIntake, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
				return err
			}
			got, err := database.FindAll[models.Lead](tx.Model(&models.Lead{}).Where("org_id = ?", orgID))
			if err == nil && len(got) != 3 { // Ada, Bob and Di
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
		orgID := seedOrg(t, db)
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
		got, err := database.FindAllInto(q(10), stale)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Name != "Ada" || got[1].Name != "Bob" {
			t.Fatalf("FindAllInto read %+v, want Ada and Bob only", got)
		}
		// On PostgreSQL the rows are read into the slice given (pgx);
		// elsewhere FindAll is GORM's Find, which makes its own.
		if reuses := database.DialectFor(db) == database.Postgres; reuses != (&got[0] == &stale[0]) {
			t.Errorf("FindAllInto reused the slice with room for 10: %v, want %v", !reuses, reuses)
		}
		// No rows, and no LIMIT to allocate ahead for: an empty list, as Find reads.
		if none, err := database.FindAll[models.Lead](db.Model(&models.Lead{}).Where("org_id = ?", models.NewID())); err != nil || none == nil || len(none) != 0 {
			t.Fatalf("no rows: %#v, %v; want an empty slice", none, err)
		}
		// Without room for the LIMIT, a new array; the one given is left as it was.
		got, err = database.FindAllInto(q(20), stale)
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
	db := dbtest.Open(t, database.Postgres)
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

	// A NULL in a field that is not a pointer is its zero value, as GORM's
	// Find reads it (pgx alone refuses it).
	sameAsFind[row](t, db.Raw(`SELECT NULL::text AS text, NULL::uuid AS id, NULL::timestamptz AS at, NULL::boolean AS flag,
		NULL::bigint AS big, NULL::double precision AS float, NULL::text AS by, 1 AS int`))

	// What pgx refuses, FindAll refuses, decoded by itself or not.
	for name, query := range map[string]string{
		"infinity":            `SELECT 'infinity'::timestamptz AS at`,
		"bigint into int16":   `SELECT 70000::bigint AS small`,
		"text into a time":    `SELECT 'soon'::text AS at`,
		"bool into a integer": `SELECT true AS int`,
	} {
		if _, err := database.FindAll[row](db.Raw(query)); err == nil {
			t.Errorf("%s: FindAll read it", name)
		}
	}
}

// A plan of pgx's path is cached per column list, whatever the names hold:
// a column named "name,email" is not the two columns name and email.
func TestFindAllPlansPerColumnList(t *testing.T) {
	if dbtest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL (elsewhere FindAll is Find)")
	}
	db := dbtest.Open(t, database.Postgres)
	type pair struct{ Name, Email string }
	if got, err := database.FindAll[pair](db.Raw(`SELECT 'x' AS "name,email", 1 AS n`)); err != nil || len(got) != 1 || got[0] != (pair{}) {
		t.Fatalf("one column named name,email: %+v %v", got, err)
	}
	if got, err := database.FindAll[pair](db.Raw(`SELECT 'n' AS name, 'e' AS email`)); err != nil || len(got) != 1 || got[0] != (pair{"n", "e"}) {
		t.Fatalf("the columns name and email: %+v %v", got, err)
	}
}

func sameAsFind[T any](t *testing.T, q *gorm.DB) {
	t.Helper()
	var want []T
	if err := q.Session(&gorm.Session{}).Find(&want).Error; err != nil {
		t.Fatal(err)
	}
	got, err := database.FindAll[T](q.Session(&gorm.Session{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("FindAll read\n%+v\nFind read\n%+v", got, want)
	}
}

// seedOrg is an organization with one member, for rows to belong to.
func seedOrg(t *testing.T, db *gorm.DB) string {
	t.Helper()
	now := models.Now()
	org := models.Organization{ID: models.NewID(), Name: "Acme", Status: models.OrgActive, Plan: models.PlanFree,
		Timezone: "UTC", Currency: "USD", CreatedBy: "u", CreatedAt: now, UpdatedAt: now}
	uid := models.NewID()
	member := models.Member{ID: models.NewID(), OrgID: org.ID, UserID: &uid, Email: "m@acme.io", Role: models.RoleAgent,
		Status: models.MemberActive, CreatedAt: now, UpdatedAt: now}
	for _, row := range []any{&org, &member} {
		if err := db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	return org.ID
}
