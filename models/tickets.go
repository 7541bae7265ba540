package models

import (
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// OpenTicket creates t (its number set here) in org in one transaction: it
// takes the next ticket number within the plan's seat and monthly ticket
// limits, finds or creates the requester's customer (named requesterName,
// or after the e-mail's local part), and records both on the customer's
// history, by actor. Two creations can never both take the last slot: the
// check runs under a lock on the workspace's ticket counter.
func OpenTicket(ctx context.Context, db *gorm.DB, org *Organization, t *Ticket, requesterName string, by Actor) error {
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		number, err := takeTicketSlot(tx, org, t.CreatedAt)
		if err != nil {
			return err
		}
		t.Number = number
		cust, created, err := customerFor(tx, org.ID, t.RequesterEmail, requesterName)
		if err != nil {
			return err
		}
		t.CustomerID = &cust.ID
		if created {
			if err := RecordCustomerEvent(tx, org.ID, cust.ID, nil, "customer_created", "Customer created from a ticket", by); err != nil {
				return err
			}
		}
		if err := tx.Create(t).Error; err != nil {
			return err
		}
		return RecordCustomerEvent(tx, org.ID, cust.ID, &t.ID, "ticket_created",
			"Ticket #"+Itoa(t.Number)+" opened: "+t.Subject, by)
	})
}

// takeTicketSlot locks the workspace's counter, checks the plan's seat and
// monthly ticket limits, and returns the next ticket number.
func takeTicketSlot(tx *gorm.DB, org *Organization, now time.Time) (int, error) {
	month := now.In(org.Location()).Format("2006-01")
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&TicketCounter{
		OrgID: org.ID, LastNumber: FirstTicketNumber - 1, Month: month, UpdatedAt: now}).Error; err != nil {
		return 0, err
	}
	var counter TicketCounter
	if err := LockForUpdate(tx).Take(&counter, "org_id = ?", org.ID).Error; err != nil {
		return 0, err
	}
	if counter.Month != month {
		counter.Month, counter.MonthCount = month, 0
	}
	plan, err := FindPlan(tx.Statement.Context, tx, org.Plan)
	if err != nil {
		return 0, err
	}
	if plan.Seats != nil {
		used, err := SeatsInUse(tx, org.ID)
		if err != nil {
			return 0, err
		}
		if used > int64(*plan.Seats) {
			return 0, Err(ErrLimit, "seat_limit_reached",
				"%d seats are in use but the %s plan has %d; remove members or upgrade to open tickets.", used, plan.Name, *plan.Seats)
		}
	}
	if plan.TicketsPerMonth != nil && counter.MonthCount >= *plan.TicketsPerMonth {
		return 0, Err(ErrLimit, "ticket_limit_reached",
			"The %s plan allows %d tickets a month and they are used; upgrade for more.", plan.Name, *plan.TicketsPerMonth)
	}
	counter.LastNumber++
	counter.MonthCount++
	counter.UpdatedAt = now
	return counter.LastNumber, tx.Save(&counter).Error
}

// customerFor finds the workspace's customer with email, or creates one.
func customerFor(tx *gorm.DB, orgID, email, name string) (*Customer, bool, error) {
	var cust Customer
	err := tx.Take(&cust, "org_id = ? AND email = ?", orgID, email).Error
	if err == nil {
		return &cust, false, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, err
	}
	now := Now()
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	cust = Customer{ID: NewID(), OrgID: orgID, Name: name, Email: email, CreatedAt: now, UpdatedAt: now}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "org_id"}, {Name: "email"}}, DoNothing: true}).Create(&cust)
	if res.Error != nil || res.RowsAffected == 1 {
		return &cust, res.Error == nil, res.Error
	}
	// Created concurrently (e.g. POST /customers): use that one.
	return &cust, false, tx.Take(&cust, "org_id = ? AND email = ?", orgID, email).Error
}
