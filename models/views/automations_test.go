package views_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// The fields a rule's conditions may name are the fields each object's
// view shows (plus what the matching adds to a ticket): a field added to
// a view and not to models' list would be refused as unknown.
func TestAutomationFieldsAreTheViewsFields(t *testing.T) {
	rows := map[string]any{
		models.AutomationTicket: &models.Ticket{}, models.AutomationLead: &models.Lead{}, models.AutomationDeal: &models.Deal{},
		models.AutomationContact: &models.Contact{}, models.AutomationCustomer: &models.Customer{},
	}
	added := map[string][]string{models.AutomationTicket: {"comment", "message", "requester"}}
	for object, row := range rows {
		subject, err := views.Subject(row)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, f := range models.AutomationFields(object) {
			listed = append(listed, strings.TrimSuffix(f, ".…"))
		}
		want := slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(subject)), added[object]...)))
		if got := slices.Sorted(slices.Values(listed)); !slices.Equal(got, want) {
			t.Errorf("%s: conditions know %v, the view shows %v", object, got, want)
		}
	}
}
