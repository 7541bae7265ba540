package activities

import (
	"testing"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// A message rejected after it was accepted is answered with a notice only
// when a person sent it, once an hour: never a machine's message (an
// auto-reply, a list's), a bounce or a mailer-daemon's — never a notice to
// a notice.
func TestRejectionNoticesGoToPeopleOnceAnHour(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		org := models.NewID()
		from := func(sender string) *models.InboundEmail { return &models.InboundEmail{OrgID: org, MailFrom: sender} }
		for _, c := range []struct {
			name string
			m    *models.InboundEmail
			p    models.ParsedEmail
			want bool
		}{
			{"a person", from("ann@example.com"), models.ParsedEmail{From: "ann@example.com"}, true},
			{"the same person within the hour", from("ann@example.com"), models.ParsedEmail{From: "ann@example.com"}, false},
			{"another person", from("cy@example.com"), models.ParsedEmail{From: "cy@example.com"}, true},
			{"an auto-reply", from("bob@example.com"), models.ParsedEmail{From: "bob@example.com", Automatic: "auto_submitted"}, false},
			{"a list's message", from("news@example.com"), models.ParsedEmail{From: "news@example.com", Automatic: "list"}, false},
			{"a bounce (null sender)", from(""), models.ParsedEmail{Automatic: "no_return_path"}, false},
			{"a mailer-daemon", from("MAILER-DAEMON@example.com"), models.ParsedEmail{From: "mailer-daemon@example.com"}, false},
			{"a delivery report", from("dan@example.com"), models.ParsedEmail{From: "dan@example.com", Bounce: &models.Bounce{}}, false},
		} {
			got, err := noticeDue(db, c.m, &c.p, models.Now())
			if err != nil || got != c.want {
				t.Errorf("%s: notice %v (%v), want %v", c.name, got, err, c.want)
			}
		}
	})
}
