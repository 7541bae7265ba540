// Package transfers serves import and export (issue 48) for the CRM and
// the Helpdesk alike: POST …/imports takes a file (multipart, spooled
// and checked, then stored in the database a part at a time; imports.go),
// GET …/imports/{id} shows its Import workflow's progress and …/errors
// its failed rows; POST …/exports starts an Export workflow whose file
// …/exports/{id}/file serves until it expires, and the CRM's
// …/privacy/export one of a person's data (exports.go), and its
// …/privacy/erase erases one (erasures.go). Each app mounts the routes
// with its own way of finding the organization (Deps.Org) and imports
// only its own objects.
package transfers

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/outbox"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// Deps are what the routes need.
type Deps struct {
	// App is "crm" or "helpdesk": the objects it imports, and its paths.
	App     string
	DB      *gorm.DB
	Starter *outbox.Starter
	// Org resolves the organization a request acts in, and its caller:
	// bodyOrgID is the one a JSON body names ("" for none).
	Org func(c *fiber.Ctx, bodyOrgID string) (*auth.Principal, error)
}

type handlers struct{ Deps }

// Routes mounts the import and export routes on r (the app's group).
// Imports and exports are for ADMINs and OWNERs, and API keys: they read
// or write every row of the organization.
func Routes(r fiber.Router, d Deps) {
	h := &handlers{d}
	r.Post("/imports", h.createImport)
	r.Get("/imports", h.listImports)
	r.Get("/imports/:id", h.getImport)
	r.Get("/imports/:id/errors", h.importErrors)
	r.Post("/imports/:id/cancel", h.cancelImport)
	r.Post("/exports", h.createExport)
	r.Get("/exports", h.listExports)
	r.Get("/exports/:id", h.getExport)
	r.Get("/exports/:id/file", h.exportFile)
	if d.App == "crm" {
		r.Post("/organization/:id/privacy/export", h.privacyExport)
		r.Post("/organization/:id/privacy/erase", h.erase)
		r.Get("/organization/:id/privacy/erasures", h.listErasures)
		r.Get("/organization/:id/privacy/erasures/:erasureId", h.getErasure)
	}
}

// UploadPaths are the routes that take a body over the server's limit
// (api.BodyLimit), streamed: the apps' import routes.
var UploadPaths = []string{"POST /crm/imports", "POST /helpdesk/imports"}

// IsDownload tells whether path is an export's file.
func IsDownload(path string) bool {
	for _, app := range []string{"/crm/exports/", "/helpdesk/exports/"} {
		if id, ok := strings.CutPrefix(path, app); ok && strings.HasSuffix(id, "/file") {
			return true
		}
	}
	return false
}

// admin resolves the caller's organization and requires an ADMIN, OWNER
// or key.
func (h *handlers) admin(c *fiber.Ctx, bodyOrgID string) (*auth.Principal, error) {
	p, err := h.Org(c, bodyOrgID)
	if err != nil {
		return nil, err
	}
	return p, auth.RequireAdmin(p)
}

// base is the app's path prefix.
func (h *handlers) base() string { return "/" + h.App }

// progress is a job in state's percent done and, while it runs, when it
// should end at its pace so far.
func progress(state string, total *int64, processed int64, started *time.Time) (float64, *time.Time) {
	switch {
	case state == models.ImportDone:
		return 100, nil
	case total == nil || *total == 0:
		return 0, nil
	}
	percent := float64(int(float64(processed)*1000/float64(*total))) / 10
	if processed == 0 || started == nil || state != models.ImportRunning {
		return percent, nil
	}
	elapsed := models.Now().Sub(*started)
	eta := models.Now().Add(time.Duration(float64(elapsed) * float64(*total-processed) / float64(processed))).Truncate(time.Second)
	return percent, &eta
}

// mine is the app's imports (or exports) of p's organization: of the
// objects it imports, and — for its OWNER only, who alone may make them —
// in the CRM the exports of a person's data.
func (h *handlers) mine(c *fiber.Ctx, p *auth.Principal) *gorm.DB {
	objects := models.ImportObjectsOf(h.App)
	if h.App == "crm" && isOwner(p) {
		objects = append(objects, models.PersonExport)
	}
	return h.DB.WithContext(c.UserContext()).Where("org_id = ? AND object IN ?", p.OrgID, objects)
}

// isOwner tells whether p is a signed-in OWNER (no key).
func isOwner(p *auth.Principal) bool { return !p.IsKey() && p.Role == models.RoleOwner }

// one reads the path's import or export of the app in the caller's
// organization, for an ADMIN of it; another's, or none, is 404 what.
func one[T any](h *handlers, c *fiber.Ctx, what string) (*T, error) {
	p, err := h.admin(c, "")
	if err != nil {
		return nil, err
	}
	id := c.Params("id")
	if !models.ValidID(id) {
		return nil, models.NotFound(what)
	}
	var row T
	err = h.mine(c, p).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.NotFound(what)
	}
	return &row, err
}

// list answers a page of the app's imports or exports, newest first, for
// an ADMIN of the caller's organization.
func list[T any, R any](h *handlers, c *fiber.Ctx, cursor func(*T) web.Cursor, view func(*T) R) error {
	p, err := h.admin(c, "")
	if err != nil {
		return err
	}
	page, err := web.ParsePage(c)
	if err != nil {
		return err
	}
	rows, err := web.Paginate(h.mine(c, p), page, cursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, view)
}
