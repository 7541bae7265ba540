package web_test

import (
	"testing"

	"github.com/business-suite/suite/api/web"
)

func TestTemporalUI(t *testing.T) {
	var none web.TemporalUI
	if got := none.Workflow("ai-job/1"); got != "" {
		t.Errorf("zero value links %q, want nothing", got)
	}
	if got := web.NewTemporalUI("", "suite").Search("x"); got != "" {
		t.Errorf("no base links %q, want nothing", got)
	}
	ui := web.NewTemporalUI("http://ui.test/", "")
	for _, c := range []struct{ got, want string }{
		// A workflow id holds slashes: escaped, it stays one path element.
		{ui.Workflow("subscription/org/chg/retry-1"), "http://ui.test/namespaces/default/workflows/subscription%2Forg%2Fchg%2Fretry-1"},
		{ui.Search(`WorkflowType = "AIJob"`), "http://ui.test/namespaces/default/workflows?query=WorkflowType+%3D+%22AIJob%22"},
		{web.NewTemporalUI("http://ui.test", "a b").Workflow("w"), "http://ui.test/namespaces/a%20b/workflows/w"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
