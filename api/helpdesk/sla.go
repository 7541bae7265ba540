package helpdesk

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// The workspace's SLA policy (GET/PUT /helpdesk/sla-policy), for its
// admins. Each PUT records a new version; the tickets opened from then on
// run under it, each keeping the version it was opened under.

type slaPolicyResponse struct {
	models.SLAPolicy
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
}

func toSLAPolicy(v *models.SLAPolicyVersion) (slaPolicyResponse, error) {
	p, err := v.Parsed()
	if err != nil {
		return slaPolicyResponse{}, err
	}
	if p.Holidays == nil {
		p.Holidays = []string{}
	}
	return slaPolicyResponse{SLAPolicy: *p, Version: v.Version, CreatedAt: v.CreatedAt}, nil
}

func (h *handlers) getSLAPolicy(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	v, err := models.CurrentSLAPolicy(h.DB.WithContext(c.UserContext()), p.OrgID)
	if err != nil {
		return err
	}
	if v == nil {
		return models.ErrNoSLAPolicy
	}
	out, err := toSLAPolicy(v)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func (h *handlers) putSLAPolicy(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	var req models.SLAPolicy
	if err := web.Decode(c, &req, req.Validate); err != nil {
		return err
	}
	v, err := models.SaveSLAPolicy(web.Tx(c), p.OrgID, &req, string(p.Actor()), models.Now())
	if err != nil {
		return err
	}
	out, err := toSLAPolicy(v)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

type slaApplyResponse struct {
	Version int `json:"version"`
	Tickets int `json:"tickets"`
}

// applySLAPolicy moves the workspace's open tickets to its current policy
// (models.ApplySLAPolicy), in the request's transaction with the wake-up
// of each ticket's SLA workflow.
func (h *handlers) applySLAPolicy(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	tx := h.Starter.In(c, web.Tx(c))
	version, moved, wake, err := models.ApplySLAPolicy(tx.DB, p.OrgID, models.Now())
	if err != nil {
		return err
	}
	for _, t := range wake {
		if err := tx.WakeTicketSLA(t); err != nil {
			return err
		}
	}
	return c.JSON(slaApplyResponse{Version: version, Tickets: moved})
}

// slaAttainment is the share of tickets that missed no SLA target.
type slaAttainment struct {
	Tickets  int64 `json:"tickets"`
	Breached int64 `json:"breached"`
	// Attainment is (tickets − breached) / tickets; null without tickets.
	Attainment *float64 `json:"attainment"`
}

func (a *slaAttainment) add(n, breached int64) {
	a.Tickets += n
	a.Breached += breached
	v := float64(a.Tickets-a.Breached) / float64(a.Tickets)
	a.Attainment = &v
}

type slaAnalyticsResponse struct {
	Timezone   string                    `json:"timezone"`
	From       string                    `json:"from"`
	To         string                    `json:"to"`
	Overall    slaAttainment             `json:"overall"`
	ByPriority map[string]*slaAttainment `json:"byPriority"`
	// ByAgent is keyed by member id; "unassigned" for tickets without one.
	ByAgent map[string]*slaAttainment `json:"byAgent"`
}

// slaDefaultDays is the period of the SLA analytics without from/to.
const slaDefaultDays = 30

// slaAnalytics reports SLA attainment over the tickets opened from `from`
// to `to` (dates in the workspace's time zone, both included; the last 30
// days by default) that run under a policy: how many missed a target so
// far, by priority and by assignee. The database counts.
func (h *handlers) slaAnalytics(c *fiber.Ctx) error {
	p := auth.From(c)
	var q struct {
		From string `json:"from" validate:"omitempty,datetime=2006-01-02"`
		To   string `json:"to" validate:"omitempty,datetime=2006-01-02"`
	}
	if err := web.DecodeQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	org, err := models.FindOrg(ctx, h.DB, p.OrgID)
	if err != nil {
		return err
	}
	loc := org.Location()
	y, m, d := time.Now().In(loc).Date()
	to := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if q.To != "" {
		to, _ = time.ParseInLocation(time.DateOnly, q.To, loc)
	}
	from := to.AddDate(0, 0, -(slaDefaultDays - 1))
	if q.From != "" {
		from, _ = time.ParseInLocation(time.DateOnly, q.From, loc)
	}
	if from.After(to) {
		return models.Invalid(models.FieldError{Field: "from", Code: "range", Message: "Must not be after to."})
	}
	out := slaAnalyticsResponse{Timezone: loc.String(), From: from.Format(time.DateOnly), To: to.Format(time.DateOnly),
		ByPriority: map[string]*slaAttainment{}, ByAgent: map[string]*slaAttainment{}}
	for _, pr := range models.TicketPriorities {
		out.ByPriority[pr] = &slaAttainment{}
	}
	var groups []struct {
		Priority string
		AgentID  *string
		N, B     int64
	}
	err = h.DB.WithContext(ctx).Model(&models.Ticket{}).
		Select("priority, agent_id, COUNT(*) AS n, COUNT(CASE WHEN sla_breached THEN 1 END) AS b").
		Where("org_id = ? AND sla_state IS NOT NULL AND created_at >= ? AND created_at < ?", p.OrgID, from.UTC(), to.AddDate(0, 0, 1).UTC()).
		Group("priority, agent_id").Scan(&groups).Error
	if err != nil {
		return err
	}
	for _, g := range groups {
		out.Overall.add(g.N, g.B)
		if a, ok := out.ByPriority[g.Priority]; ok {
			a.add(g.N, g.B)
		}
		agent := "unassigned"
		if g.AgentID != nil {
			agent = *g.AgentID
		}
		if out.ByAgent[agent] == nil {
			out.ByAgent[agent] = &slaAttainment{}
		}
		out.ByAgent[agent].add(g.N, g.B)
	}
	return c.JSON(out)
}
