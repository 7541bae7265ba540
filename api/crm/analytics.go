package crm

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// Every figure below is computed by the database (COUNT, SUM, GROUP BY):
// no handler loads deals, leads or tasks to add them up in Go. Amounts are
// summed as stored, whatever a deal's own currency; the result is labelled
// with the organization's currency, which every deal gets by default.

type analyticsCounts struct {
	Contacts     int64 `json:"contacts"`
	Leads        int64 `json:"leads"`
	OpenDeals    int64 `json:"openDeals"`
	WonDeals     int64 `json:"wonDeals"`
	LostDeals    int64 `json:"lostDeals"`
	OpenTasks    int64 `json:"openTasks"`
	OverdueTasks int64 `json:"overdueTasks"`
}

type stageSummary struct {
	Stage       string  `json:"stage"`
	Count       int64   `json:"count"`
	Amount      float64 `json:"amount"`
	Probability float64 `json:"probability"`
}

type analyticsResponse struct {
	Currency string          `json:"currency"`
	Counts   analyticsCounts `json:"counts"`
	// PipelineValue is Σ amount of open deals; WeightedPipelineValue is
	// Σ amount × stage probability over the same open deals; WonRevenue is
	// Σ amount of WON deals.
	PipelineValue         float64        `json:"pipelineValue"`
	WeightedPipelineValue float64        `json:"weightedPipelineValue"`
	WonRevenue            float64        `json:"wonRevenue"`
	DealsByStage          []stageSummary `json:"dealsByStage"`
}

// openStages is the SQL list of the open stages, and stageProbabilitySQL a
// CASE giving a deal's win probability; both are built once from the
// domain's tables (models.DealStages, models.StageProbability), so the
// probabilities are defined in one place.
var openStages, stageProbabilitySQL = func() (string, string) {
	var open []string
	var cases strings.Builder
	cases.WriteString("CASE stage")
	for _, s := range models.DealStages {
		if models.OpenStage(s) {
			open = append(open, "'"+s+"'")
		}
		cases.WriteString(" WHEN '" + s + "' THEN " + strconv.FormatFloat(models.StageProbability[s], 'f', -1, 64))
	}
	cases.WriteString(" ELSE 0 END")
	return "(" + strings.Join(open, ", ") + ")", cases.String()
}()

// analytics is the dashboard summary. AGENTs see the figures of the deals,
// leads and tasks assigned to them; contacts are the team's and counted in
// full. overdueTasks counts OPEN tasks due before today in the
// organization's time zone.
func (h *handlers) analytics(c *fiber.Ctx) error {
	p, err := h.orgOf(c, "")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	org, err := models.FindOrg(ctx, h.DB, p.OrgID)
	if err != nil {
		return err
	}
	db := h.DB.WithContext(ctx)
	inOrg := func(model any) *gorm.DB { return web.Scope{OrgID: p.OrgID}.Narrow(db.Model(model)) }
	// AGENTs count only the leads, deals and tasks assigned to them.
	assigned := func(model any) *gorm.DB { return rowScope(p, "assigned_to_id").Narrow(db.Model(model)) }
	out := analyticsResponse{Currency: org.Currency, DealsByStage: make([]stageSummary, 0, len(models.DealStages))}

	if err := inOrg(&models.Contact{}).Count(&out.Counts.Contacts).Error; err != nil {
		return err
	}
	if err := assigned(&models.Lead{}).Count(&out.Counts.Leads).Error; err != nil {
		return err
	}

	var deals struct {
		OpenDeals, WonDeals, LostDeals           int64
		PipelineValue, WeightedValue, WonRevenue float64
	}
	err = assigned(&models.Deal{}).Select(
		"COUNT(CASE WHEN stage IN "+openStages+" THEN 1 END) AS open_deals, "+
			"COUNT(CASE WHEN stage = ? THEN 1 END) AS won_deals, "+
			"COUNT(CASE WHEN stage = ? THEN 1 END) AS lost_deals, "+
			"COALESCE(SUM(CASE WHEN stage IN "+openStages+" THEN amount ELSE 0 END), 0) AS pipeline_value, "+
			"COALESCE(SUM(CASE WHEN stage IN "+openStages+" THEN amount * ("+stageProbabilitySQL+") ELSE 0 END), 0) AS weighted_value, "+
			"COALESCE(SUM(CASE WHEN stage = ? THEN amount ELSE 0 END), 0) AS won_revenue",
		models.StageWon, models.StageLost, models.StageWon).Scan(&deals).Error
	if err != nil {
		return err
	}
	out.Counts.OpenDeals, out.Counts.WonDeals, out.Counts.LostDeals = deals.OpenDeals, deals.WonDeals, deals.LostDeals
	out.PipelineValue, out.WeightedPipelineValue, out.WonRevenue = cents(deals.PipelineValue), cents(deals.WeightedValue), cents(deals.WonRevenue)

	var byStage []struct {
		Stage  string
		Count  int64
		Amount float64
	}
	err = assigned(&models.Deal{}).
		Select("stage, COUNT(*) AS count, COALESCE(SUM(amount), 0) AS amount").Group("stage").Scan(&byStage).Error
	if err != nil {
		return err
	}
	for _, s := range models.DealStages {
		sum := stageSummary{Stage: s, Probability: models.StageProbability[s]}
		for _, row := range byStage {
			if row.Stage == s {
				sum.Count, sum.Amount = row.Count, cents(row.Amount)
			}
		}
		out.DealsByStage = append(out.DealsByStage, sum)
	}

	today := time.Now().In(org.Location()).Format(time.DateOnly)
	var tasks struct{ OpenTasks, OverdueTasks int64 }
	err = assigned(&models.Task{}).Select(
		"COUNT(CASE WHEN status = ? THEN 1 END) AS open_tasks, "+
			"COUNT(CASE WHEN status = ? AND due_date <> '' AND due_date < ? THEN 1 END) AS overdue_tasks",
		taskOpen, taskOpen, today).Scan(&tasks).Error
	if err != nil {
		return err
	}
	out.Counts.OpenTasks, out.Counts.OverdueTasks = tasks.OpenTasks, tasks.OverdueTasks
	return c.JSON(out)
}

// Leaderboard periods and how many months each spans.
var periodMonths = map[string]int{"month": 1, "quarter": 3, "year": 12}

type leaderboardEntry struct {
	MemberID  string  `json:"memberId"`
	Name      string  `json:"name"`
	Email     string  `json:"email"`
	WonAmount float64 `json:"wonAmount"`
	WonCount  int64   `json:"wonCount"`
	Target    float64 `json:"target"`
	// Attainment is wonAmount / target, null when the member has no target.
	Attainment *float64 `json:"attainment"`
}

type leaderboardResponse struct {
	Period   string             `json:"period"`
	From     time.Time          `json:"from"`
	To       time.Time          `json:"to"`
	Currency string             `json:"currency"`
	Data     []leaderboardEntry `json:"data"`
}

// periodBounds returns [from, to) of the calendar month, quarter or year
// that holds now, in loc.
func periodBounds(period string, now time.Time, loc *time.Location) (time.Time, time.Time) {
	now = now.In(loc)
	var from time.Time
	switch period {
	case "year":
		from = time.Date(now.Year(), time.January, 1, 0, 0, 0, 0, loc)
	case "quarter":
		from = time.Date(now.Year(), (now.Month()-1)/3*3+1, 1, 0, 0, 0, 0, loc)
	default:
		from = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
	}
	return from, from.AddDate(0, periodMonths[period], 0)
}

// leaderboard ranks every active member of the organization by the amount
// of the deals assigned to them and won in the current calendar period (in
// the organization's time zone), against their target. It is a team board:
// AGENTs see everyone's figures.
func (h *handlers) leaderboard(c *fiber.Ctx) error {
	p, err := h.orgOf(c, "")
	if err != nil {
		return err
	}
	period := c.Query("period", "month")
	months, ok := periodMonths[period]
	if !ok {
		return models.Invalid(models.FieldError{Field: "period", Code: "oneof", Message: "Must be one of: month, quarter, year."})
	}
	ctx := c.UserContext()
	org, err := models.FindOrg(ctx, h.DB, p.OrgID)
	if err != nil {
		return err
	}
	from, to := periodBounds(period, time.Now(), org.Location())
	from, to = from.UTC(), to.UTC()

	rows, err := wonByMember(h.DB.WithContext(ctx), p, from, to)
	if err != nil {
		return err
	}
	out := leaderboardResponse{Period: period, From: from, To: to, Currency: org.Currency, Data: make([]leaderboardEntry, len(rows))}
	for i, r := range rows {
		// A member's target is a monthly target: a quarter's is three of
		// them, a year's twelve.
		target := cents(r.Target * float64(months))
		e := leaderboardEntry{MemberID: r.MemberID, Name: r.Name, Email: r.Email, WonAmount: cents(r.WonAmount),
			WonCount: r.WonCount, Target: target}
		if target > 0 {
			a := math.Round(e.WonAmount/target*10000) / 10000
			e.Attainment = &a
		}
		out.Data[i] = e
	}
	return c.JSON(out)
}

type wonRow struct {
	MemberID  string
	Name      string
	Email     string
	Target    float64
	WonAmount float64
	WonCount  int64
}

// wonByMember sums, per active member, the deals assigned to them that were
// won in [from, to): one query, members LEFT JOIN their won deals, so
// members who won nothing are listed with zeros.
func wonByMember(db *gorm.DB, p *auth.Principal, from, to time.Time) ([]wonRow, error) {
	var rows []wonRow
	err := db.Table("members AS m").
		Select("m.id AS member_id, m.name, m.email, m.target, "+
			"COALESCE(SUM(d.amount), 0) AS won_amount, COUNT(d.id) AS won_count").
		Joins("LEFT JOIN deals AS d ON d.assigned_to_id = m.id AND d.org_id = m.org_id "+
			"AND d.stage = ? AND d.won_at >= ? AND d.won_at < ?", models.StageWon, from, to).
		Where("m.org_id = ? AND m.status = ?", p.OrgID, models.MemberActive).
		Group("m.id, m.name, m.email, m.target").
		Order("won_amount DESC, m.name, m.id").
		Scan(&rows).Error
	return rows, err
}
