package database_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// TestInsertUnlessWritesWhatCreateWrites holds InsertUnless, its guard
// finding nothing, to GORM's Create on both dialects: the same stored row,
// a zero CreatedAt and UpdatedAt set to one time, Create's error for a
// duplicate key (GORM's ErrDuplicatedKey on PostgreSQL), and the write
// made in the transaction of the handle it is given.
func TestInsertUnlessWritesWhatCreateWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := seedOrg(t, db)
		const never = "SELECT 1 WHERE 1 = ?"
		insert := func(db *gorm.DB, row *models.Contact) error {
			wrote, err := database.InsertUnless(db, row, never, 0)
			if err == nil && !wrote {
				t.Fatalf("InsertUnless wrote nothing for %s with a guard that finds no row", row.ID)
			}
			return err
		}
		contact := func() *models.Contact {
			return &models.Contact{ID: models.NewID(), OrgID: orgID, Name: `Ada "<&>"`, Email: "ada@example.com",
				Phone: "+1 415 555 2671", Company: "Engines", Designation: "CTO", Type: models.ContactPerson,
				Notes: "two\nlines, ünïcode", CreatedBy: models.ActorSystem}
		}
		created, inserted := contact(), contact()
		if err := db.Create(created).Error; err != nil {
			t.Fatal(err)
		}
		if err := insert(db, inserted); err != nil {
			t.Fatal(err)
		}
		if inserted.CreatedAt.IsZero() || !inserted.CreatedAt.Equal(inserted.UpdatedAt) {
			t.Fatalf("CreatedAt %v, UpdatedAt %v: want both set to one time, as Create sets them", inserted.CreatedAt, inserted.UpdatedAt)
		}
		var a, b models.Contact
		if err := db.First(&a, "id = ?", created.ID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.First(&b, "id = ?", inserted.ID).Error; err != nil {
			t.Fatal(err)
		}
		if !b.CreatedAt.Equal(inserted.CreatedAt.Truncate(time.Microsecond)) {
			t.Fatalf("stored CreatedAt %v, want %v", b.CreatedAt, inserted.CreatedAt)
		}
		b.ID, b.CreatedAt, b.UpdatedAt = a.ID, a.CreatedAt, a.UpdatedAt
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("InsertUnless stored\n  %+v\nCreate stored\n  %+v", b, a)
		}

		errCreate := db.Create(created).Error
		_, errInsert := database.InsertUnless(db, inserted, never, 0)
		if errCreate == nil || errInsert == nil || errInsert.Error() != errCreate.Error() ||
			errors.Is(errInsert, gorm.ErrDuplicatedKey) != errors.Is(errCreate, gorm.ErrDuplicatedKey) {
			t.Fatalf("writing a row again: InsertUnless reported %v, Create %v", errInsert, errCreate)
		}

		inTx := contact()
		rollBack := errors.New("roll back")
		if err := db.Transaction(func(tx *gorm.DB) error {
			if err := insert(tx, inTx); err != nil {
				return err
			}
			var n int64
			if err := tx.Model(&models.Contact{}).Where("id = ?", inTx.ID).Count(&n).Error; err != nil || n != 1 {
				t.Errorf("inside the transaction the row is not there (%d rows, %v)", n, err)
			}
			return rollBack
		}); !errors.Is(err, rollBack) {
			t.Fatal(err)
		}
		var n int64
		if err := db.Model(&models.Contact{}).Where("id = ?", inTx.ID).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("a row inserted in a rolled-back transaction is there (%d rows, %v)", n, err)
		}
	})
}

// defaultedContact is a contact whose notes GORM defaults (the outer
// field wins over the embedded one): not a flat model, whose INSERT Create
// writes differently for a zero Notes.
type defaultedContact struct {
	models.Contact
	Notes string `gorm:"default:none yet"`
}

func (defaultedContact) TableName() string { return "contacts" }

func TestInsertUnlessRefusesAModelThatIsNotFlat(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := seedOrg(t, db)
		row := &defaultedContact{Contact: models.Contact{ID: models.NewID(), OrgID: orgID, Name: "Ada", Type: models.ContactPerson}}
		if _, err := database.InsertUnless(db, row, "SELECT 1 WHERE 1 = ?", 0); err == nil {
			t.Fatal("InsertUnless wrote a model with a database default; want an error that leaves it to Create")
		}
		var n int64
		if err := db.Model(&models.Contact{}).Where("id = ?", row.ID).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("the refused row is there (%d rows, %v)", n, err)
		}
	})
}

// TestInsertUnlessWritesOnlyWithoutAMatch holds InsertUnless to writing
// the row when its guard finds nothing, and nothing when the guard finds
// a row, on both dialects.
func TestInsertUnlessWritesOnlyWithoutAMatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID := seedOrg(t, db)
		const guard = "SELECT 1 FROM contacts WHERE org_id = ? AND email = ?"
		first := &models.Contact{ID: models.NewID(), OrgID: orgID, Name: "Ada", Email: "ada@example.com", Type: models.ContactPerson,
			CreatedBy: models.ActorSystem}
		wrote, err := database.InsertUnless(db, first, guard, orgID, "ada@example.com")
		if err != nil || !wrote {
			t.Fatalf("with no contact of that e-mail: wrote %v, %v; want the row written", wrote, err)
		}
		var stored models.Contact
		if err := db.First(&stored, "id = ?", first.ID).Error; err != nil {
			t.Fatal(err)
		}
		if first.CreatedAt.IsZero() || !stored.CreatedAt.Equal(first.CreatedAt.Truncate(time.Microsecond)) || stored.Name != "Ada" {
			t.Fatalf("stored %+v for %+v", stored, first)
		}
		second := &models.Contact{ID: models.NewID(), OrgID: orgID, Name: "Ada again", Email: "ada@example.com", Type: models.ContactPerson,
			CreatedBy: models.ActorSystem}
		wrote, err = database.InsertUnless(db, second, guard, orgID, "ada@example.com")
		if err != nil || wrote {
			t.Fatalf("with a contact of that e-mail: wrote %v, %v; want nothing written", wrote, err)
		}
		var n int64
		if err := db.Model(&models.Contact{}).Where("id = ?", second.ID).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("the guarded row is there (%d rows, %v)", n, err)
		}
		if _, err := database.InsertUnless(db, second, guard, orgID); err == nil {
			t.Fatal("a guard given too few parameters ran")
		}
	})
}
