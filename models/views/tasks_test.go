package views_test

import (
	"testing"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
)

// A task's view is the task as it was when the view was made: an update
// takes the view before changing the task, and compares it with the view
// after (models.PreviousFields), so the view must not point into the task.
func TestToTaskKeepsTheTaskAsItWas(t *testing.T) {
	task := &models.Task{ID: models.NewID(), DueDate: "2030-01-10"}
	before := views.ToTask(task)
	task.DueDate = "2030-02-01"
	if before.DueDate == nil || *before.DueDate != "2030-01-10" {
		t.Fatalf("the view before shows dueDate %v, want 2030-01-10", shown(before.DueDate))
	}
	task.DueDate = ""
	if after := views.ToTask(task); after.DueDate != nil {
		t.Fatalf("no due date shows as %q, want null", *after.DueDate)
	}
}

func shown(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
