package models

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
)

// allowanceStripes is how many rows a limited plan's monthly allowance is
// split over. A creation locks one until its commit, so that many
// creations in one workspace run at once; more than the connections a
// workspace's creations use at once (16 in `make bench`), so that a
// creation nearly always finds a free one.
const allowanceStripes = 32

// allowanceShare is stripe's share of a monthly allowance of limit: the
// shares differ by at most one and add up to limit.
func allowanceShare(limit, stripe int) int {
	share := limit / allowanceStripes
	if stripe < limit%allowanceStripes {
		share++
	}
	return share
}

// takeMonthlyTicket counts one more of the month's tickets on one of the
// workspace's allowance stripes, or refuses with ticket_limit_reached.
//
// A stripe counts at most its share of the plan's allowance (TicketAllowance:
// used below allowanceShare, a stripe of an earlier month counting as
// empty), so the stripes together never count more than the allowance.
// It takes, locked until commit, the first stripe with room that no other
// creation holds (SKIP LOCKED on PostgreSQL). When every stripe with room
// is held, it waits for one of them, picked at random so that the waiting
// creations spread over the stripes instead of queueing on one. When the
// stripes are missing (the workspace's first limited ticket), or the
// plan's allowance changed since they were cut, it locks them all, in
// order, and cuts the shares again from what the month has used
// (shareAllowance). With no stripe with room, the month is used up: the
// counts are committed, and a count only goes up within a month.
//
// Each try that waits runs in a savepoint that a failed try rolls back:
// PostgreSQL keeps the lock of a row that fails its recheck (a stripe that
// another creation filled between the statement's snapshot and its lock),
// and a creation holding such a lock while it waits for another stripe
// could close a deadlock with one that locks them all.
func takeMonthlyTicket(tx *gorm.DB, org *Organization, plan *Plan, now time.Time) error {
	a := allowance{tx: tx, org: org.ID, month: now.In(org.Location()).Format("2006-01"), limit: *plan.TicketsPerMonth, now: now}
	refused := Err(ErrLimit, "ticket_limit_reached",
		"The %s plan allows %d tickets a month and they are used; upgrade for more.", plan.Name, a.limit)
	for {
		if ok, err := a.take(lockSkippingLocked(tx), anyStripe); ok || err != nil {
			return err
		}
		var stripes []TicketAllowance
		if err := tx.Where("org_id = ?", a.org).Order("stripe").Find(&stripes).Error; err != nil {
			return err
		}
		if len(stripes) != allowanceStripes || slices.ContainsFunc(stripes, a.unsized) {
			if done, err := a.share(refused); done || err != nil {
				return err
			}
			continue
		}
		var room []int
		for _, s := range stripes {
			if a.hasRoom(s) {
				room = append(room, s.Stripe)
			}
		}
		if len(room) == 0 {
			return refused
		}
		if ok, err := a.take(LockForUpdate(tx), room[rand.IntN(len(room))]); ok || err != nil {
			return err
		}
	}
}

// allowance is one creation's count on a workspace's stripes.
type allowance struct {
	tx    *gorm.DB
	org   string
	month string
	limit int
	now   time.Time
}

// anyStripe asks take for the first stripe with room.
const anyStripe = -1

// take counts on the stripe numbered stripe (or the first, anyStripe) if
// it has room and locked, a locking query of a.tx, returns it. It tells
// whether it counted; a try that found none is rolled back to its
// savepoint, its locks with it.
func (a allowance) take(locked *gorm.DB, stripe int) (bool, error) {
	if err := a.tx.SavePoint(allowanceSavepoint).Error; err != nil {
		return false, err
	}
	q := locked.Where(stripeWithRoom, map[string]any{"org": a.org, "month": a.month, "limit": a.limit})
	if stripe != anyStripe {
		q = q.Where("stripe = ?", stripe)
	}
	var free TicketAllowance
	switch err := q.Order("stripe").Take(&free).Error; {
	case err == nil:
		return true, a.countOn(free)
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return false, err
	}
	return false, a.tx.RollbackTo(allowanceSavepoint).Error
}

// stripeWithRoom finds the workspace's stripes (@org) that have room in
// @month for an allowance of @limit: hasRoom in SQL.
var stripeWithRoom = fmt.Sprintf(`org_id = @org AND sized_for = @limit
  AND (CASE WHEN month = @month THEN used ELSE 0 END) < @limit / %d + CASE WHEN stripe < @limit %% %d THEN 1 ELSE 0 END`,
	allowanceStripes, allowanceStripes)

// hasRoom tells whether stripe, cut for a's allowance, counts less of the
// month than its share (stripeWithRoom in SQL).
func (a allowance) hasRoom(stripe TicketAllowance) bool {
	return used(stripe, a.month) < allowanceShare(a.limit, stripe.Stripe)
}

// unsized tells whether stripe was cut from another allowance than a's.
func (a allowance) unsized(stripe TicketAllowance) bool { return stripe.SizedFor != a.limit }

// share locks every stripe of the workspace, in order (made first where
// missing: two first creations that made them at once would otherwise
// both cut the shares, the later one unaware of what the other counted),
// cuts the shares again for the plan's allowance, and counts on the first
// stripe with room, or answers refused; done tells it did either. When
// another creation cut them while this one waited for the locks, it gives
// the locks back (done false) and the caller tries again: holding every
// stripe to its commit would make the creations that arrive meanwhile
// queue behind it.
func (a allowance) share(refused error) (done bool, err error) {
	if err := a.tx.SavePoint(allowanceSavepoint).Error; err != nil {
		return false, err
	}
	if err := a.tx.Clauses(clause.OnConflict{DoNothing: true}).Create(unshared(a.org, a.now)).Error; err != nil {
		return false, err
	}
	var stripes []TicketAllowance
	if err := LockForUpdate(a.tx).Where("org_id = ?", a.org).Order("stripe").Find(&stripes).Error; err != nil {
		return false, err
	}
	if !slices.ContainsFunc(stripes, a.unsized) {
		return false, a.tx.RollbackTo(allowanceSavepoint).Error
	}
	stripes = shareAllowance(a.org, stripes, a.month, a.limit, a.now)
	if err := a.tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&stripes).Error; err != nil {
		return false, err
	}
	for _, s := range stripes {
		if a.hasRoom(s) {
			return true, a.countOn(s)
		}
	}
	return true, refused
}

// countOn counts one more ticket of the month on stripe, which a.tx
// holds. (Its key is named in full: GORM leaves a zero key field, stripe
// 0, out of the WHERE it builds from a model.)
func (a allowance) countOn(stripe TicketAllowance) error {
	return a.tx.Model(&TicketAllowance{}).Where("org_id = ? AND stripe = ?", stripe.OrgID, stripe.Stripe).
		Updates(map[string]any{"month": a.month, "used": used(stripe, a.month) + 1, "updated_at": a.now}).Error
}

// allowanceSavepoint is takeMonthlyTicket's savepoint.
const allowanceSavepoint = "ticket_allowance"

// used is what stripe counts of month: nothing when it counts another.
func used(stripe TicketAllowance, month string) int {
	if stripe.Month != month {
		return 0
	}
	return stripe.Used
}

// unshared is every stripe of a workspace, counting nothing and sized for
// no allowance, to be made where missing.
func unshared(orgID string, now time.Time) []TicketAllowance {
	stripes := make([]TicketAllowance, allowanceStripes)
	for i := range stripes {
		stripes[i] = TicketAllowance{OrgID: orgID, Stripe: i, UpdatedAt: now}
	}
	return stripes
}

// shareAllowance cuts a monthly allowance of limit into the workspace's
// allowanceStripes stripes again, keeping what stripes have counted of
// month: it fills each stripe up to its share, in order, and counts what
// is over the allowance (after a move to a smaller plan) on the last
// stripe, so that a later move to a larger plan still knows it.
func shareAllowance(orgID string, stripes []TicketAllowance, month string, limit int, now time.Time) []TicketAllowance {
	total := 0
	for _, s := range stripes {
		total += used(s, month)
	}
	shared := make([]TicketAllowance, allowanceStripes)
	for i := range shared {
		n := min(total, allowanceShare(limit, i))
		if i == allowanceStripes-1 {
			n = total
		}
		total -= n
		shared[i] = TicketAllowance{OrgID: orgID, Stripe: i, Month: month, Used: n, SizedFor: limit, UpdatedAt: now}
	}
	return shared
}

// lockSkippingLocked locks the rows tx reads, passing over those another
// transaction holds (PostgreSQL; SQLite's writers take turns anyway).
func lockSkippingLocked(tx *gorm.DB) *gorm.DB {
	if database.DialectFor(tx) == database.Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	return tx
}
