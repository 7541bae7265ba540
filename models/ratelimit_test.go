package models_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// HitRates counts against several buckets in one statement and answers
// each bucket's rate in the order asked — whatever order the database
// returns its rows in — with the previous window weighted in, as HitRate.
func TestHitRatesCountsEveryBucketInTheOrderAsked(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
		// The previous minute: "b" was hit 4 times.
		if _, err := models.HitRates(ctx, db, []string{"b"}, time.Minute, start, 4); err != nil {
			t.Fatal(err)
		}
		// A quarter into the next minute: "z" and "b" once each, then
		// "b" and "z" once more (asked in the other order).
		now := start.Add(time.Minute + 15*time.Second)
		if _, err := models.HitRates(ctx, db, []string{"z", "b"}, time.Minute, now, 1); err != nil {
			t.Fatal(err)
		}
		rates, err := models.HitRates(ctx, db, []string{"z", "b"}, time.Minute, now, 1)
		if err != nil {
			t.Fatal(err)
		}
		z, b := rates[0], rates[1]
		if z.Current != 2 || z.Previous != 0 || b.Current != 2 || b.Previous != 4 {
			t.Fatalf("z %+v, b %+v", z, b)
		}
		if got := b.Estimate(); got != 2+4*0.75 {
			t.Fatalf("b's estimate %v, want 5", got)
		}
		// HitRate is the same counter.
		one, err := models.HitRate(ctx, db, "z", time.Minute, now, 1)
		if err != nil || one.Current != 3 {
			t.Fatalf("HitRate after HitRates: %+v %v", one, err)
		}
	})
}
