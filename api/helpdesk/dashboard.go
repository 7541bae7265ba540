package helpdesk

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/models"
)

// trendDays is the length of the dashboard's trend, today included.
const trendDays = 7

type trendDay struct {
	Date     string `json:"date"`
	Created  int64  `json:"created"`
	Resolved int64  `json:"resolved"`
}

type dashboardResponse struct {
	// Timezone is the workspace's time zone, in which the trend's days run
	// from midnight to midnight.
	Timezone   string           `json:"timezone"`
	ByStatus   map[string]int64 `json:"byStatus"`
	ByPriority map[string]int64 `json:"byPriority"`
	Trend      []trendDay       `json:"trend"`
	// RejectedEmails are the messages accepted and then rejected by a rule
	// of the workspace in the trend's days (GET
	// /helpdesk/inbound/email?status=rejected lists them).
	RejectedEmails int64 `json:"rejectedEmails"`
}

// dashboard counts the workspace's tickets by status and by priority, and
// the tickets created and resolved (solvedAt) on each of the last seven
// days — today and the six before, oldest first, days without tickets
// included — in the workspace's time zone, and the inbound messages
// rejected in those days. The database counts (GROUP BY, COUNT(CASE …));
// no ticket is loaded.
func (h *handlers) dashboard(c *fiber.Ctx) error {
	p := auth.From(c)
	ctx := c.UserContext()
	org, err := models.FindOrg(ctx, h.DB, p.OrgID)
	if err != nil {
		return err
	}
	loc := org.Location()
	db := h.DB.WithContext(ctx)

	out := dashboardResponse{Timezone: loc.String(), ByStatus: map[string]int64{}, ByPriority: map[string]int64{},
		Trend: make([]trendDay, trendDays)}
	for _, s := range models.TicketStatuses {
		out.ByStatus[s] = 0
	}
	for _, pr := range models.TicketPriorities {
		out.ByPriority[pr] = 0
	}
	var groups []struct {
		Status, Priority string
		N                int64
	}
	err = db.Model(&models.Ticket{}).Select("status, priority, COUNT(*) AS n").Where("org_id = ?", p.OrgID).
		Group("status, priority").Scan(&groups).Error
	if err != nil {
		return err
	}
	for _, g := range groups {
		if _, ok := out.ByStatus[g.Status]; ok {
			out.ByStatus[g.Status] += g.N
		}
		if _, ok := out.ByPriority[g.Priority]; ok {
			out.ByPriority[g.Priority] += g.N
		}
	}

	// Day i runs over [bounds[i], bounds[i+1]): local midnights, computed
	// by the calendar so that days of 23 or 25 hours (DST changes) count
	// right, compared in UTC as the timestamps are stored.
	y, m, d := time.Now().In(loc).Date()
	var bounds [trendDays + 1]time.Time
	for i := range bounds {
		bounds[i] = time.Date(y, m, d-(trendDays-1)+i, 0, 0, 0, 0, loc).UTC()
	}
	cols := make([]string, 0, 2*trendDays)
	args := make([]any, 0, 4*trendDays+5)
	for i := range trendDays {
		cols = append(cols, "COUNT(CASE WHEN created_at >= ? AND created_at < ? THEN 1 END) AS created_"+strconv.Itoa(i))
		args = append(args, bounds[i], bounds[i+1])
	}
	for i := range trendDays {
		cols = append(cols, "COUNT(CASE WHEN solved_at >= ? AND solved_at < ? THEN 1 END) AS resolved_"+strconv.Itoa(i))
		args = append(args, bounds[i], bounds[i+1])
	}
	first, end := bounds[0], bounds[trendDays]
	args = append(args, p.OrgID, first, end, first, end)
	row := db.Raw("SELECT "+strings.Join(cols, ", ")+" FROM tickets WHERE org_id = ? AND "+
		"((created_at >= ? AND created_at < ?) OR (solved_at >= ? AND solved_at < ?))", args...).Row()
	dest := make([]any, 0, 2*trendDays)
	for i := range out.Trend {
		dest = append(dest, &out.Trend[i].Created)
	}
	for i := range out.Trend {
		dest = append(dest, &out.Trend[i].Resolved)
	}
	if err := row.Scan(dest...); err != nil {
		return err
	}
	for i := range out.Trend {
		out.Trend[i].Date = bounds[i].In(loc).Format(time.DateOnly)
	}
	err = db.Model(&models.InboundEmail{}).Where("org_id = ? AND status = ? AND received_at >= ?", p.OrgID, models.InboundRejected, first).
		Count(&out.RejectedEmails).Error
	if err != nil {
		return err
	}
	return c.JSON(out)
}
