package activities

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// The steps of an automation run, each carried out by ApplyStep in its
// own transaction (automations.go holds the activities).

// stepRun is one step being carried out, in its transaction.
type stepRun struct {
	a           *Automations
	tx          *record.Tx
	run         models.AutomationRunInput
	step        models.AutomationStep
	index, pass int
	cause       models.AutomationCause
	now         time.Time
}

// apply does the step and says what it did: "done" or "skipped" (nothing
// to do), with a detail.
func (s *stepRun) apply() (outcome, detail string, err error) {
	switch s.step.Action {
	case models.StepSet:
		return s.set()
	case models.StepAddTags, models.StepRemoveTags:
		return s.tags()
	case models.StepComment:
		return s.comment()
	case models.StepNotify:
		return s.notify()
	case models.StepCreateTask:
		return s.createTask()
	case models.StepSummarize:
		return s.summary()
	case models.StepWebhook:
		subject, err := subjectOf(s.tx.DB, s.run.Object, s.run.OrgID, s.run.ObjectID)
		if err != nil {
			return "", "", err
		}
		err = s.tx.Emit(models.Event{OrgID: s.run.OrgID, Type: s.step.Event, Object: map[string]any{
			"automationId": s.run.AutomationID, "runId": s.run.RunID, "object": s.run.Object, s.run.Object: subject}})
		return "done", s.step.Event, err
	}
	return "", "", temporal.NewNonRetryableApplicationError("unknown step "+s.step.Action, ErrTypeBadPayload, nil)
}

// set sets a ticket's status, priority or assignee, or a deal's stage or
// owner (round_robin: the workspace's next agent).
func (s *stepRun) set() (string, string, error) {
	value, _ := s.step.Value.(string)
	if slices.Contains(models.MemberFields, s.step.Field) {
		member, why, err := s.member(value)
		if err != nil || why != "" {
			return "skipped", why, err
		}
		value = member
	}
	switch s.run.Object {
	case models.AutomationDeal:
		return s.setDeal(value)
	case models.AutomationLead:
		return s.setLead(value)
	}
	var u models.TicketUpdate
	switch s.step.Field {
	case "status":
		u.Status = &value
	case "priority":
		u.Priority = &value
	case "agentId":
		u.SetAgent, u.Agent = true, &value
	}
	return s.updateTicket(u, s.step.Field+" = "+value)
}

// member is the member a set step names: the workspace's next AGENT for
// round_robin, or the member id it gives. why says why there is none (no
// agent; the member left): the step is skipped.
func (s *stepRun) member(value string) (id, why string, err error) {
	if value == "round_robin" {
		next, err := models.NextAssignee(s.tx.DB, s.run.OrgID, s.run.Object)
		if next == "" && err == nil {
			why = "the workspace has no active agent to assign"
		}
		return next, why, err
	}
	if models.CheckMember(s.tx.DB, s.run.OrgID, s.step.Field, &value) != nil {
		return "", "the member to assign is no longer in the workspace", nil
	}
	return value, "", nil
}

// setDeal moves a deal to a stage (recorded in its history as any move)
// or gives it an owner, as the rule.
func (s *stepRun) setDeal(value string) (string, string, error) {
	var d models.Deal
	if err := models.LockForUpdate(s.tx.DB).Take(&d, "id = ? AND org_id = ?", s.run.ObjectID, s.run.OrgID).Error; err != nil {
		return "", "", err
	}
	before := views.ToDeal(&d)
	switch s.step.Field {
	case "stage":
		if err := models.MoveDealStage(s.tx.DB, &d, value, true, s.cause.Actor(), s.now); err != nil {
			return "", "", err
		}
	case "assignedToId":
		d.AssignedToID = &value
	}
	if err := models.CheckDeal(&d); err != nil {
		return "", "", err
	}
	if unchanged := views.ToDeal(&d); reflect.DeepEqual(before, unchanged) {
		return "skipped", "nothing to change: " + s.step.Field + " = " + value, nil
	}
	d.UpdatedAt = s.now
	if err := s.tx.Save(&d).Error; err != nil {
		return "", "", err
	}
	after := views.ToDeal(&d)
	events, err := models.ChangeEvents(d.OrgID, before, after, after, models.DealChangeTypes(before.Stage, after.Stage)...)
	if err != nil {
		return "", "", err
	}
	return "done", s.step.Field + " = " + value, s.tx.Emit(events...)
}

// setLead moves a lead to a status (as an update may: CONVERTED is a
// conversion, never a rule's) or gives it an owner, rescored as any
// change of a lead is.
func (s *stepRun) setLead(value string) (string, string, error) {
	var l models.Lead
	if err := models.LockForUpdate(s.tx.DB).Take(&l, "id = ? AND org_id = ?", s.run.ObjectID, s.run.OrgID).Error; err != nil {
		return "", "", err
	}
	before := views.ToLead(&l)
	switch s.step.Field {
	case "status":
		if err := models.CheckLeadMove(l.Status, value); err != nil {
			return "", "", err
		}
		l.Status = value
	case "assignedToId":
		l.AssignedToID = &value
	}
	if reflect.DeepEqual(before, views.ToLead(&l)) {
		return "skipped", "nothing to change: " + s.step.Field + " = " + value, nil
	}
	if err := models.RescoreLead(s.tx.DB, &l, s.now); err != nil {
		return "", "", err
	}
	l.UpdatedAt = s.now
	if err := s.tx.Save(&l).Error; err != nil {
		return "", "", err
	}
	after := views.ToLead(&l)
	err := s.tx.EmitChange(l.OrgID, before, after, after, views.LeadChangeTypes(before, after, models.EventLeadUpdated)...)
	return "done", s.step.Field + " = " + value, err
}

// tags adds or removes a ticket's tags.
func (s *stepRun) tags() (string, string, error) {
	var t models.Ticket
	if err := s.tx.Take(&t, "id = ? AND org_id = ?", s.run.ObjectID, s.run.OrgID).Error; err != nil {
		return "", "", err
	}
	var tags []string
	_ = json.Unmarshal([]byte(t.Tags), &tags)
	var named []string
	for _, v := range s.step.Value.([]any) {
		if tag := strings.ToLower(strings.TrimSpace(v.(string))); tag != "" {
			named = append(named, tag)
		}
	}
	for _, tag := range named {
		has := slices.Contains(tags, tag)
		switch {
		case s.step.Action == models.StepAddTags && !has && len(tags) < 20:
			tags = append(tags, tag)
		case s.step.Action == models.StepRemoveTags && has:
			tags = slices.DeleteFunc(tags, func(x string) bool { return x == tag })
		}
	}
	raw, _ := json.Marshal(append([]string{}, tags...))
	encoded := string(raw)
	return s.updateTicket(models.TicketUpdate{Tags: &encoded}, strings.Join(named, ", "))
}

// updateTicket applies u to the run's ticket as the rule, with what an
// agent's update brings along: the assignee's notification, the SLA and
// auto-close timers, the webhook events (which automations match too).
func (s *stepRun) updateTicket(u models.TicketUpdate, detail string) (string, string, error) {
	t, change, err := models.UpdateTicket(s.tx.DB, s.run.OrgID, s.run.ObjectID, u, s.cause.Actor(), s.now)
	if err != nil {
		return "", "", err
	}
	if change.Notify != nil {
		if _, err := s.tx.Notify(models.TicketAssignedNotice(t, *change.Notify, s.now)); err != nil {
			return "", "", err
		}
	}
	if err := s.tx.FollowTicketStatus(t, change, s.a.AutoCloseAfter); err != nil {
		return "", "", err
	}
	events, err := views.TicketChangeEvents(&change.Before, t)
	if err != nil {
		return "", "", err
	}
	if len(events) == 0 {
		return "skipped", "nothing to change: " + detail, nil
	}
	return "done", detail, s.tx.Emit(events...)
}

// comment adds an internal note, or a public reply that is e-mailed to
// the requester as an agent's would be.
func (s *stepRun) comment() (string, string, error) {
	subject, err := subjectOf(s.tx.DB, s.run.Object, s.run.OrgID, s.run.ObjectID)
	if err != nil {
		return "", "", err
	}
	return s.addComment(models.RenderTemplate(s.step.Body, s.run.Object, subject), s.step.Public)
}

// addComment adds body to the run's ticket as the rule: an internal note,
// or a public reply that is e-mailed as an agent's would be.
func (s *stepRun) addComment(body string, public bool) (string, string, error) {
	cm := &models.TicketComment{ID: models.NewID(), OrgID: s.run.OrgID, AuthorType: models.AuthorAgent,
		Body: body, Public: public, CreatedAt: s.now}
	t, change, err := models.AddTicketComment(s.tx.DB, s.run.OrgID, s.run.ObjectID, cm, s.cause.Actor(), s.now)
	if err != nil {
		return "", "", err
	}
	if err := s.tx.FollowTicketStatus(t, change, s.a.AutoCloseAfter); err != nil {
		return "", "", err
	}
	if s.a.MailOutbound && s.a.MailDomain != "" {
		if err := s.tx.EmailReply(t, cm, s.a.MailDomain, s.now); err != nil {
			return "", "", err
		}
	}
	changed, err := views.TicketChangeEvents(&change.Before, t)
	if err != nil {
		return "", "", err
	}
	shown := views.Comments(nil, nil)(cm)
	events := append([]models.Event{{OrgID: t.OrgID, Type: models.EventTicketCommentCreated, Object: shown, Subject: views.ToTicket(t)}}, changed...)
	kind := "internal note"
	if cm.Public {
		kind = "public reply"
	}
	return "done", kind + " " + cm.ID, s.tx.Emit(events...)
}

// notify tells the step's members (admins, every member, or the object's
// assignee) with a notification titled by the rule's name.
func (s *stepRun) notify() (string, string, error) {
	subject, err := subjectOf(s.tx.DB, s.run.Object, s.run.OrgID, s.run.ObjectID)
	if err != nil {
		return "", "", err
	}
	var to []string
	switch s.step.To {
	case "admins":
		to, err = models.ActiveAdminIDs(s.tx.DB, s.run.OrgID)
	case "members":
		err = s.tx.Model(&models.Member{}).Where("org_id = ? AND status = ?", s.run.OrgID, models.MemberActive).Order("id").Pluck("id", &to).Error
	case "assignee":
		for _, field := range []string{"agentId", "assignedToId"} {
			if id, ok := subject[field].(string); ok && id != "" {
				to = []string{id}
			}
		}
	}
	if err != nil {
		return "", "", err
	}
	if len(to) == 0 {
		return "skipped", "nobody to notify (" + s.step.To + ")", nil
	}
	body := models.RenderTemplate(s.step.Body, s.run.Object, subject)
	if body == "" {
		body = "A " + s.run.Object + " matched the rule."
	}
	for _, member := range to {
		n := models.AutomationNotice(s.run.OrgID, member, s.run.Name, body, s.run.Object, s.run.ObjectID, s.now)
		if _, err := s.tx.Notify(n); err != nil {
			return "", "", err
		}
	}
	return "done", strconv.Itoa(len(to)) + " notified (" + s.step.To + ")", nil
}

// createTask adds a task about the run's deal, lead or contact, as the
// rule: its title and description filled from the object, due DueIn after
// the step, for the object's assignee, the next agent or a member.
func (s *stepRun) createTask() (string, string, error) {
	subject, err := subjectOf(s.tx.DB, s.run.Object, s.run.OrgID, s.run.ObjectID)
	if err != nil {
		return "", "", err
	}
	t := &models.Task{ID: models.NewID(), OrgID: s.run.OrgID, Priority: cmp.Or(s.step.Priority, "MEDIUM"), Status: "OPEN",
		Title:       models.Truncate(strings.TrimSpace(models.RenderTemplate(s.step.Title, s.run.Object, subject)), 300),
		Description: models.RenderTemplate(s.step.Body, s.run.Object, subject), CreatedBy: s.cause.Actor(), CreatedAt: s.now, UpdatedAt: s.now}
	if t.Title == "" {
		t.Title = s.run.Name
	}
	if s.step.DueIn != "" {
		d, err := models.ParseISODuration(s.step.DueIn)
		if err != nil {
			return "", "", temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadPayload, err)
		}
		t.DueDate = s.now.Add(d).UTC().Format(time.DateOnly)
	}
	id := s.run.ObjectID
	switch s.run.Object {
	case models.AutomationDeal:
		t.DealID = &id
	case models.AutomationLead:
		t.LeadID = &id
	case models.AutomationContact:
		t.ContactID = &id
	}
	switch s.step.To {
	case "":
	case "assignee":
		if owner, _ := subject["assignedToId"].(string); owner != "" {
			t.AssignedToID = &owner
		}
	default:
		member, _, err := s.member(s.step.To)
		if err != nil {
			return "", "", err
		}
		if member != "" {
			t.AssignedToID = &member
		}
	}
	if err := s.tx.Create(t).Error; err != nil {
		return "", "", err
	}
	return "done", "task " + t.ID, s.tx.Emit(models.Event{OrgID: t.OrgID, Type: models.EventTaskCreated, Object: views.ToTask(t)})
}

// summary records an ai_summarize step whose AI job has finished: on a
// ticket, its summary as an internal note; on a lead or a customer, the
// job (GET /v1/ai/jobs/{id}) in the step's detail.
func (s *stepRun) summary() (string, string, error) {
	var job models.AIJob
	if err := s.tx.Take(&job, "id = ? AND org_id = ?", summaryJobID(s.run.RunID, s.index, s.pass), s.run.OrgID).Error; err != nil {
		return "", "", err
	}
	var out models.AISummaryOutput
	if job.Status != models.AIJobSucceeded || json.Unmarshal(job.Output(), &out) != nil {
		return "", "", models.Err(models.ErrConflict, "ai_job_failed", "The AI job %s did not succeed (%s: %s).", job.ID, job.Status, job.ErrorMessage)
	}
	if s.run.Object != models.AutomationTicket {
		return "done", "AI job " + job.ID, nil
	}
	outcome, _, err := s.addComment("AI summary:\n\n"+out.Summary, false)
	return outcome, "AI job " + job.ID + ", as an internal note", err
}
