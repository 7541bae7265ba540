package ai

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/models"
)

// usageResponse is the organization's AI token use this month against its
// plan's quota (null: unlimited).
type usageResponse struct {
	Plan             string    `json:"plan"`
	Month            string    `json:"month"`
	PromptTokens     int64     `json:"prompt_tokens"`
	CompletionTokens int64     `json:"completion_tokens"`
	TotalTokens      int64     `json:"total_tokens"`
	Jobs             int       `json:"jobs"`
	Quota            *int64    `json:"quota"`
	Remaining        *int64    `json:"remaining"`
	ResetsAt         time.Time `json:"resets_at"`
}

func (h *handlers) usage(c *fiber.Ctx) error {
	r, err := models.AIUsageFor(c.UserContext(), h.DB, auth.From(c).OrgID, models.Now())
	if err != nil {
		return err
	}
	return c.JSON(usageResponse{Plan: r.Plan, Month: r.Month, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		TotalTokens: r.TotalTokens, Jobs: r.Jobs, Quota: r.Quota, Remaining: r.Remaining, ResetsAt: r.ResetsAt})
}
