package models_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/models"
)

// subject is a ticket as the API shows it, as conditions read it.
func subject(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConditionOperators(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tk := subject(t, `{"id":"t1","number":1042,"priority":"urgent","status":"open","email":"Ops@BigCo.example","agentId":null,
		"tags":["vip","billing"],"subject":"Engines down","createdAt":"2026-11-29T09:00:00Z","requester":{"email":"ops@bigco.example"}}`)
	previous := map[string]any{"priority": "normal"}
	cases := []struct {
		c    models.Condition
		want bool
	}{
		{models.Condition{Field: "priority", Operator: "is", Value: "URGENT"}, true},
		{models.Condition{Field: "priority", Operator: "is_not", Value: "urgent"}, false},
		{models.Condition{Field: "number", Operator: "is", Value: 1042.0}, true},
		{models.Condition{Field: "number", Operator: "greater_than", Value: 1000.0}, true},
		{models.Condition{Field: "number", Operator: "less_than", Value: 1000.0}, false},
		{models.Condition{Field: "tags", Operator: "includes", Value: "vip"}, true},
		{models.Condition{Field: "tags", Operator: "not_includes", Value: "vip"}, false},
		{models.Condition{Field: "tags", Operator: "not_includes", Value: "spam"}, true},
		{models.Condition{Field: "subject", Operator: "contains", Value: "ENGINE"}, true},
		{models.Condition{Field: "subject", Operator: "starts_with", Value: "eng"}, true},
		{models.Condition{Field: "email", Operator: "ends_with", Value: "@bigco.example"}, true},
		{models.Condition{Field: "requester.email", Operator: "ends_with", Value: "@bigco.example"}, true},
		{models.Condition{Field: "requester.phone", Operator: "present"}, false},
		{models.Condition{Field: "agentId", Operator: "blank"}, true},
		{models.Condition{Field: "agentId", Operator: "present"}, false},
		{models.Condition{Field: "subject", Operator: "present"}, true},
		{models.Condition{Field: "createdAt", Operator: "hours_since", Value: 3.0}, true},
		{models.Condition{Field: "createdAt", Operator: "hours_since", Value: 4.0}, false},
		{models.Condition{Field: "priority", Operator: "changed"}, true},
		{models.Condition{Field: "status", Operator: "changed"}, false},
		{models.Condition{Field: "priority", Operator: "changed_to", Value: "urgent"}, true},
		{models.Condition{Field: "priority", Operator: "changed_from", Value: "normal"}, true},
		{models.Condition{Field: "priority", Operator: "changed_from", Value: "low"}, false},
		// A number is not a string, nor a missing field a value.
		{models.Condition{Field: "number", Operator: "contains", Value: "10"}, false},
		{models.Condition{Field: "nothing", Operator: "is", Value: "x"}, false},
	}
	for _, tc := range cases {
		got, results := models.Conditions{All: []models.Condition{tc.c}}.Evaluate(tk, previous, now)
		if got != tc.want || len(results) != 1 || results[0].Holds != tc.want {
			t.Errorf("%s %s %v: %v (%+v), want %v", tc.c.Field, tc.c.Operator, tc.c.Value, got, results, tc.want)
		}
	}

	// A created object (no earlier values) changed nothing; a re-check
	// (nil) does not test the change operators again.
	changed := models.Conditions{All: []models.Condition{{Field: "priority", Operator: "changed_to", Value: "urgent"}}}
	if ok, _ := changed.Evaluate(tk, map[string]any{}, now); ok {
		t.Error("changed_to held for a created object")
	}
	if ok, _ := changed.Evaluate(tk, nil, now); !ok {
		t.Error("a re-check tested changed_to again")
	}
}

// All must all hold; of Any, one (when there are any).
func TestConditionGroups(t *testing.T) {
	tk := subject(t, `{"priority":"urgent","tags":["vip"],"email":"a@b.example"}`)
	is := func(field, value string) models.Condition {
		return models.Condition{Field: field, Operator: "is", Value: value}
	}
	cases := []struct {
		c    models.Conditions
		want bool
	}{
		{models.Conditions{}, true},
		{models.Conditions{All: []models.Condition{is("priority", "urgent")}}, true},
		{models.Conditions{All: []models.Condition{is("priority", "urgent"), is("email", "x")}}, false},
		{models.Conditions{Any: []models.Condition{is("priority", "low"), is("email", "a@b.example")}}, true},
		{models.Conditions{Any: []models.Condition{is("priority", "low"), is("email", "x")}}, false},
		{models.Conditions{All: []models.Condition{is("priority", "low")}, Any: []models.Condition{is("email", "a@b.example")}}, false},
	}
	for i, tc := range cases {
		if got, _ := tc.c.Evaluate(tk, nil, time.Now()); got != tc.want {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}

func TestAutomationDefinitionValidation(t *testing.T) {
	ok := models.AutomationDefinition{Name: "VIP", Object: "ticket", On: []string{"created", "comment.created"}, Refire: "once",
		Conditions: models.Conditions{All: []models.Condition{{Field: "priority", Operator: "is", Value: "urgent"}}},
		Steps: []models.AutomationStep{
			{Action: "set", Field: "agentId", Value: "round_robin"},
			{Action: "add_tags", Value: []any{"escalated"}},
			{Action: "delay", Duration: "P1DT2H", BusinessHours: true},
			{Action: "comment", Body: "Still open: {{ticket.number}}"},
			{Action: "notify", To: "assignee"},
			{Action: "wait_for", Event: "comment.created", Timeout: "P1D", OnTimeout: "stop",
				Where: &models.Conditions{All: []models.Condition{{Field: "comment.public", Operator: "is", Value: true}}}},
			{Action: "webhook", Event: "automation.escalated"},
		}}
	if bad := ok.Validate(10); len(bad) != 0 {
		t.Fatalf("a good rule: %+v", bad)
	}
	if bad := ok.Validate(6); len(bad) != 1 || bad[0].Field != "steps" || bad[0].Code != "max" {
		t.Fatalf("seven steps against a limit of six: %+v", bad)
	}

	bad := models.AutomationDefinition{Name: " ", Object: "deal", On: []string{"stage_changed", "created", "sla.breached"}, Refire: "sometimes",
		Conditions: models.Conditions{Any: []models.Condition{{Field: "amount", Operator: "greater_than", Value: "lots"},
			{Field: "stage", Operator: "present", Value: "x"}, {Field: "a..b", Operator: "is", Value: "x"}}},
		Steps: []models.AutomationStep{
			{Action: "add_tags", Value: []any{"hot"}},
			{Action: "delay", Duration: "PT0S"},
			{Action: "delay", Duration: "2 hours"},
			{Action: "wait_for", Event: "comment.created", Timeout: "P400D"},
			{Action: "notify", To: "everyone", Body: "{{ticket.number}}"},
			{Action: "webhook", Event: "deal.won"},
		}}
	var fields []string
	for _, e := range bad.Validate(10) {
		fields = append(fields, e.Field+":"+e.Code)
	}
	want := []string{"name:required", "refire:oneof", "on[2]:unknown_trigger", "conditions.any[0].value:number", "conditions.any[1].value:not_allowed",
		"conditions.any[2].field:unknown_field", "steps[0].action:not_available", "steps[1].duration:range", "steps[2].duration:duration",
		"steps[3].event:unknown_trigger", "steps[3].timeout:range", "steps[4].to:oneof", "steps[4].body:unknown_variable", "steps[5].event:event"}
	for _, w := range want {
		if !slices.Contains(fields, w) {
			t.Errorf("no %s among %v", w, fields)
		}
	}
	if len(fields) != len(want) {
		t.Errorf("%d errors, want %d: %v", len(fields), len(want), fields)
	}
}

func TestISODurationsAndTemplates(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT2H": 2 * time.Hour, "P1D": 24 * time.Hour, "P1DT12H": 36 * time.Hour, "PT90M": 90 * time.Minute,
		"P2W": 14 * 24 * time.Hour, "PT30S": 30 * time.Second} {
		if got, err := models.ParseISODuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "2h", "P1M", "P1Y", "PT1.5H", "P1W2D"} {
		if _, err := models.ParseISODuration(in); err == nil {
			t.Errorf("%q was read as a duration", in)
		}
	}

	tk := map[string]any{"number": 1042.0, "subject": "Engines down", "agentId": nil}
	if got := models.RenderTemplate("#{{ticket.number}} {{ ticket.subject }} for {{ticket.agentId}}.", "ticket", tk); got != "#1042 Engines down for ." {
		t.Errorf("rendered %q", got)
	}
	if err := models.CheckTemplate("{{ticket.number}}", "ticket"); err != nil {
		t.Error(err)
	}
	for _, body := range []string{"{{contact.name}}", "{{ticket.colour}}", "{{ ticket.number"} {
		if err := models.CheckTemplate(body, "ticket"); err == nil || !strings.Contains(err.Error(), "{{") {
			t.Errorf("%q passed: %v", body, err)
		}
	}
}
