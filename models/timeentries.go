package models

import (
	"time"

	"gorm.io/gorm"
)

// TimeEntry is time spent for a customer on one of their tickets.
type TimeEntry struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	CustomerID  string
	TicketID    string
	MemberID    *string
	Minutes     int
	Description string
	Billable    bool
	CreatedAt   time.Time
}

// LogTime stores entry, time spent on ticket (one of the entry's customer's
// tickets), and records it on the customer's history by actor, in tx.
func LogTime(tx *gorm.DB, entry *TimeEntry, ticket *Ticket, by Actor) error {
	if err := tx.Create(entry).Error; err != nil {
		return err
	}
	return RecordCustomerEvent(tx, entry.OrgID, entry.CustomerID, &ticket.ID, "time_logged",
		Itoa(entry.Minutes)+" minutes logged on ticket #"+Itoa(ticket.Number), by)
}

// TimeTotals sums the minutes of the time entries q selects: all of them,
// and the billable ones, in SQL.
func TimeTotals(q *gorm.DB) (total, billable int64, err error) {
	var totals struct{ Total, Billable int64 }
	err = q.Model(&TimeEntry{}).
		Select("COALESCE(SUM(minutes), 0) AS total, COALESCE(SUM(CASE WHEN billable THEN minutes ELSE 0 END), 0) AS billable").
		Scan(&totals).Error
	return totals.Total, totals.Billable, err
}
