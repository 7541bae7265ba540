package crm

import (
	"github.com/gofiber/fiber/v2"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// orgOf resolves the organization a CRM data request acts in: bodyOrgID
// (writes) or ?orgId= for user tokens; an API key's own organization.
func (h *handlers) orgOf(c *fiber.Ctx, bodyOrgID string) (*auth.Principal, error) {
	orgID := bodyOrgID
	if orgID == "" {
		orgID = c.Query("orgId")
	}
	return h.Auth.ResolveOrg(c, orgID)
}

// userBody decodes the body of a request that only a signed-in user may
// make (an API key is a 403) into req, and returns the user.
func userBody(c *fiber.Ctx, req any) (*auth.Principal, error) {
	p := auth.From(c)
	if err := auth.RequireUser(p); err != nil {
		return nil, err
	}
	return p, web.Decode(c, req)
}

// agentScoped tells whether the caller sees only work assigned to them:
// AGENTs do; ADMINs, OWNERs and API keys see everything.
func agentScoped(p *auth.Principal) bool { return !p.IsKey() && p.Role == models.RoleAgent }

// linked is what a reference to another CRM record must name
// (models.CheckReference).
const linked = "a record of this organization"

// rowScope is the rows of the organization p acts in that p sees: for an
// AGENT, when the rows have an assignee column, only theirs.
func rowScope(p *auth.Principal, assigneeColumn string) web.Scope {
	s := web.Scope{OrgID: p.OrgID}
	if assigneeColumn != "" && agentScoped(p) {
		s.Column, s.Value = assigneeColumn, p.MemberID
	}
	return s
}

// inOrg is the Scoper of the CRM's reads and removals: the organization
// the query names (orgOf) and the rows of it the caller sees (rowScope).
func (h *handlers) inOrg(assigneeColumn string) web.Scoper {
	return func(c *fiber.Ctx) (web.Scope, error) {
		p, err := h.orgOf(c, "")
		if err != nil {
			return web.Scope{}, err
		}
		return rowScope(p, assigneeColumn), nil
	}
}

// nullable turns "" into nil (clearing an optional reference).
func nullable(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// dateRule validates YYYY-MM-DD dates (empty allowed where optional).
const dateRule = "omitempty,datetime=2006-01-02"
