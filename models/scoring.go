package models

import (
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// DefaultPhoneRegion is used for phone numbers written without a +country
// prefix.
const DefaultPhoneRegion = "US"

// NormalizePhone parses a free-form phone number and returns it in E.164
// (+14155550100), or "" when it is not a valid number.
func NormalizePhone(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	num, err := phonenumbers.Parse(raw, DefaultPhoneRegion)
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return ""
	}
	return phonenumbers.Format(num, phonenumbers.E164)
}

// ScoreFactor is one contribution to a lead's score.
type ScoreFactor struct {
	Factor string `json:"factor"`
	Points int    `json:"points"`
}

// ScoreInput is everything the score depends on.
type ScoreInput struct {
	Email, Phone, Company, Source string
	Value                         float64
	// RecentActivities counts non-system activities in the 30 days before Now.
	RecentActivities int
	LastActivityAt   *time.Time
	Now              time.Time
	Status           string
}

// ScoreResult is a lead's score (0–100), win probability (0–1) and the
// factors that produced the score.
type ScoreResult struct {
	Score       int
	Probability float64
	Factors     []ScoreFactor
}

// FactorsJSON is the stored form of the factors.
func (r ScoreResult) FactorsJSON() string {
	b, _ := json.Marshal(r.Factors)
	return string(b)
}

var freeEmailDomains = set("gmail.com", "googlemail.com", "yahoo.com", "yahoo.co.uk", "hotmail.com", "outlook.com",
	"live.com", "msn.com", "icloud.com", "me.com", "aol.com", "proton.me", "protonmail.com", "gmx.com", "gmx.de",
	"mail.com", "yandex.com", "yandex.ru", "mail.ru", "zoho.com", "web.de", "qq.com", "163.com")

var disposableEmailDomains = set("mailinator.com", "10minutemail.com", "guerrillamail.com", "tempmail.com",
	"temp-mail.org", "yopmail.com", "trashmail.com", "getnada.com", "sharklasers.com", "dispostable.com",
	"maildrop.cc", "throwawaymail.com", "fakeinbox.com")

var sourcePoints = map[string]int{"referral": 5, "partner": 5, "event": 4, "webinar": 4, "website": 3, "web": 3,
	"webform": 3, "web-form": 3, "form": 3, "inbound": 3, "linkedin": 3, "ads": 2, "google-ads": 2, "social": 2, "cold": 1}

func set(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, i := range items {
		m[i] = true
	}
	return m
}

// Score computes a lead's score: fit (at most 60 points: e-mail domain,
// valid phone, company, value band, source) plus engagement (at most 40:
// activities in the last 30 days, recency of the last one). It is pure and
// deterministic: the same input always gives the same result.
func Score(in ScoreInput) ScoreResult {
	var factors []ScoreFactor
	add := func(name string, points int) {
		if points > 0 {
			factors = append(factors, ScoreFactor{Factor: name, Points: points})
		}
	}

	// Fit: e-mail (≤20).
	if _, domain, ok := strings.Cut(NormalizeEmail(in.Email), "@"); ok && domain != "" {
		switch {
		case disposableEmailDomains[domain]:
			add("disposable_email", 0)
		case freeEmailDomains[domain]:
			add("free_email", 5)
		default:
			add("business_email", 20)
		}
	}
	// Fit: reachable by phone (10), company named (10).
	if NormalizePhone(in.Phone) != "" {
		add("valid_phone", 10)
	}
	if strings.TrimSpace(in.Company) != "" {
		add("company_given", 10)
	}
	// Fit: value band (≤15).
	switch {
	case in.Value >= 50_000:
		add("value_50k_plus", 15)
	case in.Value >= 10_000:
		add("value_10k_plus", 10)
	case in.Value >= 1_000:
		add("value_1k_plus", 5)
	}
	// Fit: source (≤5).
	add("source_"+strings.ToLower(strings.TrimSpace(in.Source)), sourcePoints[strings.ToLower(strings.TrimSpace(in.Source))])

	// Engagement: recent activities (≤25) and recency (≤15).
	add("recent_activities", min(in.RecentActivities*5, 25))
	if in.LastActivityAt != nil {
		age := in.Now.Sub(*in.LastActivityAt)
		switch {
		case age <= 3*24*time.Hour:
			add("active_last_3_days", 15)
		case age <= 7*24*time.Hour:
			add("active_last_7_days", 10)
		case age <= 14*24*time.Hour:
			add("active_last_14_days", 5)
		}
	}

	score := 0
	for _, f := range factors {
		score += f.Points
	}
	score = min(score, 100)
	if factors == nil {
		factors = []ScoreFactor{}
	}
	return ScoreResult{Score: score, Probability: probability(score, in.Status), Factors: factors}
}

// probability maps a score to a win probability with a logistic curve
// centred on 50 (score 50 → 0.5, 80 → ≈0.92, 20 → ≈0.08); a converted lead
// is won (1) and an unqualified one lost (0).
func probability(score int, status string) float64 {
	switch status {
	case LeadConverted:
		return 1
	case LeadUnqualified:
		return 0
	}
	p := 1 / (1 + math.Exp(-float64(score-50)/12))
	return math.Round(p*100) / 100
}
