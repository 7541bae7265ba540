package database_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// Every way a read reaches the pool outside a transaction waits for its
// turn. Writes never do, nor does a transaction's statements (they hold
// their connection, and may hold locks the waiting reads wait for).
func TestReadsOnThePoolTakeTurns(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		release, waiting := database.HoldTurns(t, db)
		count := func(q *gorm.DB) error {
			var n int64
			return q.Model(&models.Contact{}).Count(&n).Error
		}
		unbounded := map[string]func() error{
			"a write":                 func() error { return db.Exec("UPDATE contacts SET name = name WHERE 1 = 0").Error },
			"a read in a transaction": func() error { return db.Transaction(func(tx *gorm.DB) error { return count(tx) }) },
		}
		for what, run := range unbounded {
			ran := make(chan error, 1)
			go func() { ran <- run() }()
			select {
			case err := <-ran:
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s waited for a turn", what)
			}
		}

		statements := map[string]func() error{
			"Exec": func() error { return db.Exec("SELECT 1").Error },
			"Find": func() error {
				var rows []models.Contact
				return db.Limit(1).Find(&rows).Error
			},
			"Row": func() error {
				var n int
				return db.Raw("SELECT 1").Row().Scan(&n)
			},
			"FindAll": func() error {
				_, err := database.FindAll[models.Contact](db.Model(&models.Contact{}).Limit(1))
				return err
			},
		}
		done := make(chan string, len(statements))
		for name, run := range statements {
			go func() {
				if err := run(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				done <- name
			}()
		}
		database.WaitFor(t, "every statement waits for a turn", func() bool {
			select {
			case name := <-done:
				t.Fatalf("%s ran while every turn was taken", name)
			default:
			}
			return waiting() == len(statements)
		})
		release()
		for range statements {
			<-done
		}
	})
}
