package models_test

import (
	"testing"
	"time"

	"github.com/business-suite/suite/models"
)

func TestScore(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	cases := []struct {
		name    string
		in      models.ScoreInput
		score   int
		prob    float64
		factors []string
	}{
		{"empty", models.ScoreInput{Now: now}, 0, 0.02, nil},
		{"business email only", models.ScoreInput{Email: "ada@acme.io", Now: now}, 20, 0.08, []string{"business_email"}},
		{"free email", models.ScoreInput{Email: "ada@Gmail.com", Now: now}, 5, 0.02, []string{"free_email"}},
		{"disposable email scores nothing", models.ScoreInput{Email: "x@mailinator.com", Now: now}, 0, 0.02, nil},
		{"full fit", models.ScoreInput{Email: "cto@acme.io", Phone: "+1 415 555 2671", Company: "Acme", Value: 75_000, Source: "Referral", Now: now},
			60, 0.7, []string{"business_email", "valid_phone", "company_given", "value_50k_plus", "source_referral"}},
		{"invalid phone ignored", models.ScoreInput{Phone: "12345", Value: 9_999, Now: now}, 5, 0.02, []string{"value_1k_plus"}},
		{"value band 10k", models.ScoreInput{Value: 10_000, Now: now}, 10, 0.03, []string{"value_10k_plus"}},
		{"engagement caps at 40", models.ScoreInput{RecentActivities: 9, LastActivityAt: ago(time.Hour), Now: now},
			40, 0.3, []string{"recent_activities", "active_last_3_days"}},
		{"recency decays", models.ScoreInput{RecentActivities: 1, LastActivityAt: ago(10 * 24 * time.Hour), Now: now},
			10, 0.03, []string{"recent_activities", "active_last_14_days"}},
		{"everything: 100", models.ScoreInput{Email: "cto@acme.io", Phone: "+14155552671", Company: "Acme", Value: 50_000,
			Source: "partner", RecentActivities: 5, LastActivityAt: ago(time.Hour), Now: now}, 100, 0.98, nil},
		{"converted is won", models.ScoreInput{Email: "a@acme.io", Status: models.LeadConverted, Now: now}, 20, 1, nil},
		{"unqualified is lost", models.ScoreInput{Email: "a@acme.io", Status: models.LeadUnqualified, Now: now}, 20, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := models.Score(tc.in)
			if got.Score != tc.score || got.Probability != tc.prob {
				t.Fatalf("score %d prob %v, want %d %v (factors %+v)", got.Score, got.Probability, tc.score, tc.prob, got.Factors)
			}
			sum := 0
			for _, f := range got.Factors {
				sum += f.Points
			}
			if sum != got.Score && got.Score != 100 {
				t.Fatalf("factors %+v do not add up to %d", got.Factors, got.Score)
			}
			if tc.factors != nil {
				if len(got.Factors) != len(tc.factors) {
					t.Fatalf("factors %+v, want %v", got.Factors, tc.factors)
				}
				for i, f := range tc.factors {
					if got.Factors[i].Factor != f {
						t.Fatalf("factors %+v, want %v", got.Factors, tc.factors)
					}
				}
			}
			if again := models.Score(tc.in); again.Score != got.Score || again.FactorsJSON() != got.FactorsJSON() {
				t.Fatal("not deterministic")
			}
		})
	}
}

func TestNormalizePhone(t *testing.T) {
	for in, want := range map[string]string{
		"+1 (415) 555-2671": "+14155552671",
		"415-555-2671":      "+14155552671",
		"+44 20 7946 0958":  "+442079460958",
		"12345":             "",
		"call me maybe":     "",
		"":                  "",
	} {
		if got := models.NormalizePhone(in); got != want {
			t.Errorf("NormalizePhone(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStageAndStatusRules(t *testing.T) {
	cases := []struct {
		from, to string
		admin    bool
		reason   string
		ok       bool
	}{
		{models.StageNew, models.StageProposal, false, "", true},
		{models.StageProposal, models.StageNew, false, "", true},
		{models.StageNegotiation, models.StageWon, false, "", true},
		{models.StageMeeting, models.StageLost, false, "", false},
		{models.StageMeeting, models.StageLost, false, "budget", true},
		{models.StageWon, models.StageNegotiation, false, "", false},
		{models.StageWon, models.StageNegotiation, true, "", true},
		{models.StageLost, models.StageQualified, true, "", true},
		{models.StageWon, models.StageLost, true, "x", false},
	}
	for _, c := range cases {
		if err := models.CheckStageMove(c.from, c.to, c.admin, c.reason); (err == nil) != c.ok {
			t.Errorf("%s → %s (admin %v): %v", c.from, c.to, c.admin, err)
		}
	}
	if models.CheckLeadMove(models.LeadNew, models.LeadQualified) != nil ||
		models.CheckLeadMove(models.LeadConverted, models.LeadNew) == nil ||
		models.CheckLeadMove(models.LeadQualified, models.LeadConverted) == nil {
		t.Fatal("lead lifecycle rules")
	}
}
