package helpdesk

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// The workspace's SLA policy (GET/PUT /helpdesk/sla-policy), for its
// admins. Each PUT records a new version; the tickets opened from then on
// run under it, each keeping the version it was opened under.

type slaPolicyResponse struct {
	models.SLAPolicy
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
}

func toSLAPolicy(v *models.SLAPolicyVersion) (slaPolicyResponse, error) {
	p, err := v.Parsed()
	if err != nil {
		return slaPolicyResponse{}, err
	}
	if p.Holidays == nil {
		p.Holidays = []string{}
	}
	return slaPolicyResponse{SLAPolicy: *p, Version: v.Version, CreatedAt: v.CreatedAt}, nil
}

var errNoSLAPolicy = models.Err(models.ErrNotFound, "not_found", "The workspace has no SLA policy; PUT one.")

func (h *handlers) getSLAPolicy(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	v, err := models.CurrentSLAPolicy(h.DB.WithContext(c.UserContext()), p.OrgID)
	if err != nil {
		return err
	}
	if v == nil {
		return errNoSLAPolicy
	}
	out, err := toSLAPolicy(v)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func (h *handlers) putSLAPolicy(c *fiber.Ctx) error {
	p := auth.From(c)
	if err := auth.RequireAdmin(p); err != nil {
		return err
	}
	var req models.SLAPolicy
	if err := web.Decode(c, &req, req.Validate); err != nil {
		return err
	}
	v, err := models.SaveSLAPolicy(web.Tx(c), p.OrgID, &req, string(p.Actor()), models.Now())
	if err != nil {
		return err
	}
	out, err := toSLAPolicy(v)
	if err != nil {
		return err
	}
	return c.JSON(out)
}
