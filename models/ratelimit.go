package models

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// RateCounter counts one rate-limit bucket's requests in one fixed window.
// Counters live in the database, so that a limit holds across every API
// replica; a window's row expires two windows after it began (the sliding
// estimate reads the previous window).
type RateCounter struct {
	Bucket      string    `gorm:"primaryKey"`
	WindowStart time.Time `gorm:"primaryKey"`
	Hits        int
	ExpiresAt   time.Time
}

// Rate is a bucket's request count over the last window, estimated the
// sliding-window way: the current fixed window's hits plus the previous
// window's weighted by how much of it the sliding window still covers.
type Rate struct {
	Current, Previous int
	// Weight is the share of the previous window still covered (0..1].
	Weight float64
	// WindowEnd is when the current fixed window ends.
	WindowEnd time.Time
}

// Estimate is the number of requests in the window ending now.
func (r Rate) Estimate() float64 { return float64(r.Previous)*r.Weight + float64(r.Current) }

// newRate is the empty rate of the window ending at now, with the starts of
// the current and previous fixed windows its counts come from.
func newRate(window time.Duration, now time.Time) (r Rate, current, previous time.Time) {
	current = now.Truncate(window)
	r = Rate{Weight: 1 - float64(now.Sub(current))/float64(window), WindowEnd: current.Add(window)}
	return r, current, current.Add(-window)
}

// HitRate counts n requests against bucket and returns its rate including
// them, in one statement; a negative n gives requests back.
func HitRate(ctx context.Context, db *gorm.DB, bucket string, window time.Duration, now time.Time, n int) (Rate, error) {
	rates, err := HitRates(ctx, db, []string{bucket}, window, now, n)
	if err != nil {
		return Rate{}, err
	}
	return rates[0], nil
}

// HitRates is HitRate for several buckets at once, in one statement (one
// round trip where a message counts against its sender and its client);
// the rates come in the order of buckets.
func HitRates(ctx context.Context, db *gorm.DB, buckets []string, window time.Duration, now time.Time, n int) ([]Rate, error) {
	r, cur, prev := newRate(window, now)
	// Rows are upserted in a fixed order, so that two statements counting
	// against the same buckets never wait on each other's rows crosswise.
	ordered := slices.Sorted(slices.Values(buckets))
	ordered = slices.Compact(ordered)
	values := strings.Repeat("(?, ?, ?, ?), ", len(ordered))
	args := make([]any, 0, 4*len(ordered)+1)
	for _, b := range ordered {
		args = append(args, b, cur, n, cur.Add(2*window))
	}
	args = append(args, prev)
	rows, err := db.WithContext(ctx).Raw(`INSERT INTO rate_counters (bucket, window_start, hits, expires_at) VALUES `+values[:len(values)-2]+`
ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_counters.hits + excluded.hits
RETURNING bucket, hits, COALESCE((SELECT p.hits FROM rate_counters p WHERE p.bucket = rate_counters.bucket AND p.window_start = ?), 0)`,
		args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byBucket := make(map[string]Rate, len(ordered))
	for rows.Next() {
		var bucket string
		rate := r
		if err := rows.Scan(&bucket, &rate.Current, &rate.Previous); err != nil {
			return nil, err
		}
		byBucket[bucket] = rate
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Rate, len(buckets))
	for i, b := range buckets {
		rate, ok := byBucket[b]
		if !ok {
			return nil, fmt.Errorf("rate counter %q: no row returned", b)
		}
		out[i] = rate
	}
	return out, nil
}

// PurgeRateCounters deletes counters no estimate reads any more.
func PurgeRateCounters(ctx context.Context, db *gorm.DB, now time.Time) (int64, error) {
	res := db.WithContext(ctx).Where("expires_at < ?", now).Delete(&RateCounter{})
	return res.RowsAffected, res.Error
}
