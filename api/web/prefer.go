package web

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
)

// MaxPreferWait is the longest `Prefer: wait=N` any route honours.
const MaxPreferWait = 30 * time.Second

// ParsePreferWait reads RFC 7240's wait=N (seconds) from a Prefer header,
// capped at MaxPreferWait (a larger N is read as the cap). Other
// preferences, and a malformed or negative wait, are ignored, as the RFC
// asks.
func ParsePreferWait(header string) (time.Duration, bool) {
	for pref := range strings.SplitSeq(header, ",") {
		for part := range strings.SplitSeq(pref, ";") {
			name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
			if err != nil || n < 0 {
				return 0, false
			}
			// Capped before the multiplication, which would overflow for huge N.
			return time.Duration(min(n, int(MaxPreferWait/time.Second))) * time.Second, true
		}
	}
	return 0, false
}

// PreferWait is the request's Prefer wait (ParsePreferWait); when there is
// one, the answer says in Preference-Applied which wait was applied.
func PreferWait(c *fiber.Ctx) (time.Duration, bool) {
	wait, ok := ParsePreferWait(c.Get("Prefer"))
	if ok {
		c.Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
	}
	return wait, ok
}

// Await reloads a record with load until done says it has moved, d has
// passed or ctx has ended, and returns the last one loaded (a load error
// ends the wait with that error). It polls the database — the source of
// truth that workflows write to — every 20 ms at first, backing off to
// 250 ms.
func Await[T any](ctx context.Context, d time.Duration, load func(context.Context) (T, error), done func(T) bool) (T, error) {
	deadline := time.Now().Add(d)
	pause := 20 * time.Millisecond
	for {
		v, err := load(ctx)
		if err != nil || done(v) || !time.Now().Before(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-time.After(min(pause, time.Until(deadline))):
		}
		pause = min(pause*2, 250*time.Millisecond)
	}
}
