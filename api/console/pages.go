package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/business-suite/suite/api/billing"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// pageSize is the rows of a list page.
const pageSize = 50

// temporalTimeout bounds each read from Temporal: a page shows what the
// database has, and says so, when Temporal is slow or down.
const temporalTimeout = 3 * time.Second

// changesPage is the list of changes with its filter.
type changesPage struct {
	Filter             url.Values
	Statuses, Plans    []string
	Rows               []changeRow
	NextPage, PrevPage string
}

type changeRow struct {
	models.StaffChangeRow
	Workflow string
}

// changeFilter reads the list's filter from the query: every value is
// checked, and a bad one is a 422 naming the field.
func (h *handler) changeFilter(c *fiber.Ctx, plans []string) (models.StaffChangeFilter, int, error) {
	var f models.StaffChangeFilter
	var bad []models.FieldError
	f.Status, f.OrgID, f.Plan = strings.Clone(c.Query("status")), strings.TrimSpace(c.Query("org")), strings.Clone(c.Query("plan"))
	if f.Status != "" && !slices.Contains(models.ChangeStatuses, f.Status) {
		bad = append(bad, models.FieldError{Field: "status", Code: "oneof", Message: "Status must be one of " + strings.Join(models.ChangeStatuses, ", ") + "."})
	}
	if f.OrgID != "" && !models.ValidID(f.OrgID) {
		bad = append(bad, models.FieldError{Field: "org", Code: "uuid", Message: "Organization must be an organization id."})
	}
	if f.Plan != "" && !slices.Contains(plans, f.Plan) {
		bad = append(bad, models.FieldError{Field: "plan", Code: "oneof", Message: "Plan must be one of " + strings.Join(plans, ", ") + "."})
	}
	for _, d := range []struct {
		field string
		into  **time.Time
		add   time.Duration
	}{{"from", &f.From, 0}, {"to", &f.To, 24 * time.Hour}} {
		v := c.Query(d.field)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			bad = append(bad, models.FieldError{Field: d.field, Code: "date", Message: "Dates are YYYY-MM-DD."})
			continue
		}
		t = t.Add(d.add) // "to" includes its whole day
		*d.into = &t
	}
	offset, err := strconv.Atoi(c.Query("offset", "0"))
	if err != nil || offset < 0 || offset > 1_000_000 {
		bad = append(bad, models.FieldError{Field: "offset", Code: "range", Message: "The page offset must be a whole number from 0."})
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		bad = append(bad, models.FieldError{Field: "to", Code: "range", Message: "The To date must not be before the From date."})
	}
	if len(bad) > 0 {
		return f, 0, models.Invalid(bad...)
	}
	return f, offset, nil
}

func (h *handler) changes(c *fiber.Ctx) error {
	ctx := c.UserContext()
	var plans []string
	if err := h.d.DB.WithContext(ctx).Model(&models.Plan{}).Order("name").Pluck("name", &plans).Error; err != nil {
		return err
	}
	page := changesPage{Filter: url.Values{}, Statuses: models.ChangeStatuses, Plans: plans}
	for _, k := range []string{"status", "org", "plan", "from", "to"} {
		if v := c.Query(k); v != "" {
			page.Filter.Set(k, strings.Clone(v))
		}
	}
	f, offset, err := h.changeFilter(c, plans)
	if err != nil {
		// The form again, with what is wrong.
		p := web.ToProblem(err)
		return h.render(c, p.Status, "changes", view{Title: "Subscription changes", Problem: p, Data: page})
	}
	rows, err := models.StaffChanges(ctx, h.d.DB, f, pageSize+1, offset)
	if err != nil {
		return err
	}
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		page.NextPage = pageLink("/ops/changes", page.Filter, offset+pageSize)
	}
	if offset > 0 {
		page.PrevPage = pageLink("/ops/changes", page.Filter, max(offset-pageSize, 0))
	}
	for i := range rows {
		page.Rows = append(page.Rows, changeRow{StaffChangeRow: rows[i], Workflow: h.temporalUI.Workflow(names.SubscriptionChangeID(rows[i].OrgID, rows[i].ID, rows[i].Retry()))})
	}
	return h.render(c, http.StatusOK, "changes", view{Title: "Subscription changes", Data: page})
}

// pageLink is path with the filter and an offset.
func pageLink(path string, filter url.Values, offset int) string {
	q := url.Values{}
	for k, v := range filter {
		q[k] = v
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// changePage is one change: its organization, retries, timeline and
// whether it may be re-run.
type changePage struct {
	Change    *models.SubscriptionChange
	OrgName   string
	Retries   []models.SubscriptionChangeRetry
	Timeline  []event
	Runs      []run
	Retryable bool
	// ReloadURL is where the page reloads itself to while a run is at
	// work ("": it does not).
	ReloadURL string
}

// run is one workflow run of a change, with its Temporal UI link.
type run struct {
	Number     int
	WorkflowID string
	URL        string
}

// findChange loads the change named by the path, any organization's.
func (h *handler) findChange(ctx context.Context, id string) (*models.SubscriptionChange, string, error) {
	c, err := models.FindSubscriptionChange(ctx, h.d.DB, "", id) // any organization's
	if errors.Is(err, models.ErrNotFound) {
		return nil, "", models.NotFound("The subscription change")
	}
	if err != nil {
		return nil, "", err
	}
	var name string
	if err := h.d.DB.WithContext(ctx).Model(&models.Organization{}).Where("id = ?", c.OrgID).Pluck("name", &name).Error; err != nil {
		return nil, "", err
	}
	return c, name, nil
}

func (h *handler) change(c *fiber.Ctx) error {
	ctx := c.UserContext()
	ch, orgName, err := h.findChange(ctx, c.Params("id"))
	if err != nil {
		return err
	}
	retries, err := models.SubscriptionChangeRetries(ctx, h.d.DB, ch.ID)
	if err != nil {
		return err
	}
	timeline, runOpen, err := h.timeline(ctx, ch, retries)
	if err != nil {
		return err
	}
	page := changePage{Change: ch, OrgName: orgName, Retries: retries, Timeline: timeline, Retryable: ch.Status == models.ChangeFailed}
	page.ReloadURL = reloadURL(c, ch, runOpen)
	for r := 0; r <= ch.Retry(); r++ {
		id := names.SubscriptionChangeID(ch.OrgID, ch.ID, r)
		page.Runs = append(page.Runs, run{Number: r + 1, WorkflowID: id, URL: h.temporalUI.Workflow(id)})
	}
	return h.render(c, http.StatusOK, "change", view{Title: "Change " + ch.ID, Notice: notice(c, ch.Status, page.ReloadURL != ""), Data: page})
}

// maxReloads bounds how often a change page reloads itself (every 3 s:
// three minutes), so that a forgotten tab neither keeps its session alive
// nor reads Temporal for ever.
const maxReloads = 60

// reloadURL is where the change page reloads itself to, or "" when it
// does not: only while a run is at work — the change pending, or settled
// and its run about to end — not while it waits for the customer or the
// period end.
func reloadURL(c *fiber.Ctx, ch *models.SubscriptionChange, runOpen bool) string {
	working := ch.Status == models.ChangePending || (!models.IsOpenChange(ch.Status) && runOpen)
	n, _ := strconv.Atoi(c.Query("reload"))
	if !working || n >= maxReloads {
		return ""
	}
	q := url.Values{"reload": {strconv.Itoa(n + 1)}}
	if c.Query("done") == "retry" {
		q.Set("done", "retry")
	}
	return "/ops/changes/" + ch.ID + "?" + q.Encode()
}

// notice is the message of the action the change's page was reached
// from; status is the change's, and reloading says the page reloads
// itself.
func notice(c *fiber.Ctx, status string, reloading bool) string {
	switch {
	case c.Query("done") == "retry" && reloading:
		return "Re-run recorded: the change's new workflow run has started. This page reloads until the change settles."
	case c.Query("done") == "retry":
		return "Re-run recorded; the change is " + status + " now."
	}
	if code := c.Query("refused"); refusalCode.MatchString(code) {
		return "Not re-run (" + code + "): the change is shown as it is now."
	}
	return ""
}

// refusalCode is the shape of a problem code: what ?refused= may show.
var refusalCode = regexp.MustCompile(`^[a-z_]{1,40}$`)

// confirmRetry asks before a change is re-run: which step it resumes at,
// and what it will and will not do.
func (h *handler) confirmRetry(c *fiber.Ctx) error {
	ch, orgName, err := h.findChange(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	if ch.Status != models.ChangeFailed {
		return c.Redirect("/ops/changes/"+ch.ID, fiber.StatusSeeOther)
	}
	return h.render(c, http.StatusOK, "confirm", view{Title: "Re-run change " + ch.ID, Data: changePage{Change: ch, OrgName: orgName}})
}

// retry re-runs a failed change (billing.Service.RetryAudited: the same
// rules and audit as the operator API) and goes back to the change.
func (h *handler) retry(c *fiber.Ctx) error {
	s := sessionOf(c)
	id := strings.Clone(c.Params("id"))
	if c.FormValue("confirm") != "yes" {
		// Refused, and written down with its reason.
		if err := models.RecordStaffAction(web.Tx(c), &models.StaffAuditEntry{ActorID: s.UserID, Actor: s.Email, Channel: models.StaffViaConsole,
			Action: models.StaffRetryChange, Target: id, Outcome: models.StaffOutcomeRefused, Detail: "confirmation_required", ClientIP: web.ClientIP(c)}); err != nil {
			return err
		}
		web.KeepOnRefusal(c)
		return web.NewProblem(http.StatusUnprocessableEntity, "confirmation_required", "Confirm the re-run on its confirmation page.")
	}
	if !h.d.Billing.Configured() {
		return billing.ErrNotConfigured
	}
	tx := h.d.Billing.Starter.In(c, web.Tx(c))
	change, _, err := h.d.Billing.RetryAudited(tx, id, models.StaffAuditEntry{
		ActorID: s.UserID, Actor: s.Email, Channel: models.StaffViaConsole, ClientIP: web.ClientIP(c)})
	switch {
	case errors.Is(err, models.ErrNotFound):
		web.KeepOnRefusal(c) // its audit entry stays
		return models.NotFound("The subscription change")
	case billing.IsRefusal(err):
		// Recorded as refused; the change page says why.
		return c.Redirect("/ops/changes/"+id+"?refused="+url.QueryEscape(web.ToProblem(err).Code), fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	return c.Redirect("/ops/changes/"+change.ID+"?done=retry", fiber.StatusSeeOther)
}

// orgPage is an organization as billing staff see it.
type orgPage struct {
	Org                  *models.Organization
	Plan                 *models.Plan
	SeatsUsed, Members   int64
	Account              *models.BillingAccount
	Open                 *models.SubscriptionChange
	Changes              []changeRow
	Workflows            []workflowRow
	TemporalError        string
	WorkflowsSearchQuery string
	WorkflowsURL         string
}

type workflowRow struct {
	ID, Type, Status, URL string
	Started, Closed       *time.Time
}

func (h *handler) organization(c *fiber.Ctx) error {
	ctx := c.UserContext()
	id := strings.Clone(c.Params("id"))
	org, err := models.FindOrg(ctx, h.d.DB, id)
	if errors.Is(err, models.ErrNotFound) {
		return models.NotFound("The organization")
	}
	if err != nil {
		return err
	}
	page := orgPage{Org: org}
	if page.Plan, err = models.FindPlan(ctx, h.d.DB, org.Plan); err != nil {
		return err
	}
	db := h.d.DB.WithContext(ctx)
	if page.SeatsUsed, err = models.SeatsInUse(db, id); err != nil {
		return err
	}
	if err := db.Model(&models.Member{}).Where("org_id = ? AND status = ?", id, models.MemberActive).Count(&page.Members).Error; err != nil {
		return err
	}
	if page.Account, err = models.FindBillingAccount(ctx, h.d.DB, id); err != nil {
		return err
	}
	if page.Open, err = models.OpenSubscriptionChangeOf(ctx, h.d.DB, id); err != nil {
		return err
	}
	rows, err := models.StaffChanges(ctx, h.d.DB, models.StaffChangeFilter{OrgID: id}, 10, 0)
	if err != nil {
		return err
	}
	for i := range rows {
		page.Changes = append(page.Changes, changeRow{StaffChangeRow: rows[i], Workflow: h.temporalUI.Workflow(names.SubscriptionChangeID(rows[i].OrgID, rows[i].ID, rows[i].Retry()))})
	}
	page.WorkflowsSearchQuery = `OrgId = "` + id + `"`
	page.WorkflowsURL = h.temporalUI.Search(page.WorkflowsSearchQuery)
	page.Workflows, page.TemporalError = h.recentWorkflows(ctx, page.WorkflowsSearchQuery)
	return h.render(c, http.StatusOK, "organization", view{Title: org.Name, Data: page})
}

// recentWorkflows lists the newest workflows query finds (the
// organization's, by its OrgId search attribute), or says why it cannot.
func (h *handler) recentWorkflows(ctx context.Context, query string) ([]workflowRow, string) {
	if h.d.Temporal == nil {
		return nil, "Temporal is not configured for this process."
	}
	ctx, cancel := context.WithTimeout(ctx, temporalTimeout)
	defer cancel()
	resp, err := h.d.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: h.d.Namespace, PageSize: 20, Query: query})
	if err != nil {
		return nil, "Temporal did not answer: " + err.Error()
	}
	var out []workflowRow
	for _, w := range resp.GetExecutions() {
		row := workflowRow{ID: w.GetExecution().GetWorkflowId(), Type: w.GetType().GetName(),
			Status: strings.ToLower(strings.TrimPrefix(w.GetStatus().String(), "WorkflowExecutionStatus")), URL: h.temporalUI.Workflow(w.GetExecution().GetWorkflowId())}
		if w.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
			row.Status = "unknown"
		}
		if t := w.GetStartTime(); t != nil {
			st := t.AsTime()
			row.Started = &st
		}
		if t := w.GetCloseTime(); t != nil && w.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			ct := t.AsTime()
			row.Closed = &ct
		}
		out = append(out, row)
	}
	return out, ""
}

// auditPage is the audit log, newest first.
type auditPage struct {
	Entries            []models.StaffAuditEntry
	NextPage, PrevPage string
}

func (h *handler) audit(c *fiber.Ctx) error {
	offset, err := strconv.Atoi(c.Query("offset", "0"))
	if err != nil || offset < 0 || offset > 1_000_000 {
		return models.Invalid(models.FieldError{Field: "offset", Code: "range", Message: "The page offset must be a whole number from 0."})
	}
	entries, err := models.StaffAuditLog(c.UserContext(), h.d.DB, pageSize+1, offset)
	if err != nil {
		return err
	}
	page := auditPage{Entries: entries}
	if len(entries) > pageSize {
		page.Entries = entries[:pageSize]
		page.NextPage = pageLink("/ops/audit", nil, offset+pageSize)
	}
	if offset > 0 {
		page.PrevPage = pageLink("/ops/audit", nil, max(offset-pageSize, 0))
	}
	return h.render(c, http.StatusOK, "audit", view{Title: "Audit log", Data: page})
}
