package activities_test

import (
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// A message the database refuses a value of — an error every retry would
// meet again — is recorded rejected ("unprocessable") and the activity
// succeeds, rather than being retried for a week while the message stays
// "received"; the next message reads as ever.
func TestIngestRecordsAMessageTheDatabaseRefuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		orgID, _ := seedOrg(t, db)
		// A stand-in for any value the database cannot hold: it refuses
		// tickets with this subject.
		refuse := "CREATE TRIGGER poison BEFORE INSERT ON tickets WHEN NEW.subject = 'Poison' BEGIN SELECT RAISE(ABORT, 'poison'); END"
		if database.DialectFor(db) == database.Postgres {
			refuse = "ALTER TABLE tickets ADD CONSTRAINT poison CHECK (subject <> 'Poison')"
		}
		if err := db.Exec(refuse).Error; err != nil {
			t.Fatal(err)
		}
		store := func(subject string) string {
			m := &models.InboundEmail{OrgID: orgID, MessageID: models.NewID() + "@example.com", MailFrom: "ann@example.com",
				Rcpt: models.WorkspaceAddress(orgID, "mail.test"), Via: "smtp",
				Raw: []byte("From: ann@example.com\r\nSubject: " + subject + "\r\n\r\nHelp.\r\n")}
			insert, args := models.InsertInboundEmail(m)
			if err := db.Exec(insert, args...).Error; err != nil {
				t.Fatal(err)
			}
			return m.ID
		}
		a := &activities.Email{DB: db, Domain: "mail.test"}
		poison := store("Poison")
		res, err := a.IngestEmail(t.Context(), poison)
		if err != nil || res.Status != models.InboundRejected || res.Reason != "unprocessable" {
			t.Fatalf("the refused message: %+v, %v", res, err)
		}
		var m models.InboundEmail
		if err := db.Take(&m, "id = ?", poison).Error; err != nil || m.Status != models.InboundRejected || m.Reason != "unprocessable" {
			t.Fatalf("recorded %s %q, %v", m.Status, m.Reason, err)
		}
		res, err = a.IngestEmail(t.Context(), store("Printer on fire"))
		if err != nil || res.Status != models.InboundProcessed || res.TicketID == "" {
			t.Fatalf("the next message: %+v, %v", res, err)
		}
	})
}
