package helpdesk

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// The knowledge base: categories and Markdown articles of a workspace,
// managed here by any member (OWNER, ADMIN or AGENT: support agents author
// help content) and by hd_ keys, and read publicly (published articles
// only) through kb_public.go.

type categoryResponse struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspaceId"`
	Name        string    `json:"name"`
	Slug        string    `json:"slug"`
	Description string    `json:"description"`
	Position    int       `json:"position"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

func toCategory(k *models.KBCategory) categoryResponse {
	return categoryResponse{ID: k.ID, WorkspaceID: k.OrgID, Name: k.Name, Slug: k.Slug, Description: k.Description,
		Position: k.Position, CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt}
}

type articleResponse struct {
	ID          string     `json:"id"`
	WorkspaceID string     `json:"workspaceId"`
	CategoryID  *string    `json:"categoryId"`
	Title       string     `json:"title"`
	Slug        string     `json:"slug"`
	Body        string     `json:"body"`
	BodyHTML    string     `json:"bodyHtml"`
	Status      string     `json:"status"`
	Views       int64      `json:"views"`
	PublishedAt *time.Time `json:"publishedAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

func toArticle(a *models.KBArticle) articleResponse {
	return articleResponse{ID: a.ID, WorkspaceID: a.OrgID, CategoryID: a.CategoryID, Title: a.Title, Slug: a.Slug,
		Body: a.Body, BodyHTML: a.BodyHTML, Status: a.Status, Views: a.Views, PublishedAt: a.PublishedAt,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

func articleCursor(a *models.KBArticle) web.Cursor {
	return web.Cursor{CreatedAt: a.CreatedAt, ID: a.ID}
}

// kbPrincipal is the caller; the Helpdesk middleware has resolved its
// workspace from x-workspace-id.
func kbPrincipal(c *fiber.Ctx) (*auth.Principal, error) {
	p := auth.From(c)
	if p == nil || p.OrgID == "" {
		return nil, models.Unauthorized("Send a credential with x-workspace-id.")
	}
	return p, nil
}

// checkSlug validates a slug sent by the client (nil: none sent).
func checkSlug(slug *string) error {
	if slug == nil || validSlug(*slug) {
		return nil
	}
	return models.Invalid(models.FieldError{Field: "slug", Code: "slug",
		Message: "Must be lower-case ASCII letters and digits in groups joined by single hyphens (e.g. getting-started), at most 100 characters."})
}

// slugFor is the slug of a new category or article: the one sent
// (validated), or one derived from text. When text is blank (already
// reported) it is left to that error; when nothing can be derived, the
// client must send one.
func slugFor(sent *string, text, from string) (string, error) {
	if sent != nil {
		return *sent, checkSlug(sent)
	}
	if strings.TrimSpace(text) == "" {
		return "", nil
	}
	if s := slugify(text); s != "" {
		return s, nil
	}
	return "", models.Invalid(models.FieldError{Field: "slug", Code: "required",
		Message: "No slug can be derived from the " + from + " (it has no ASCII letter or digit); send one."})
}

func slugTaken(what, slug string) error {
	return models.Err(models.ErrConflict, "slug_taken", "Another %s of this workspace already has the slug %q.", what, slug)
}

// saveUnique runs write and turns a unique violation (the slug index) into
// a 409 slug_taken.
func saveUnique(write func() error, what, slug string) error {
	err := write()
	if err != nil && models.IsUniqueViolation(err) {
		return slugTaken(what, slug)
	}
	return err
}

// ---------------------------------------------------------------- categories

type categoryFields struct {
	Slug        *string `json:"slug"` // checked by checkSlug
	Description *string `json:"description" validate:"omitnil,max=1000"`
	Position    *int    `json:"position" validate:"omitnil,gte=0,lte=1000000"`
}

func (f *categoryFields) apply(k *models.KBCategory) {
	if f.Description != nil {
		k.Description = strings.TrimSpace(*f.Description)
	}
	if f.Position != nil {
		k.Position = *f.Position
	}
}

type createCategoryRequest struct {
	Name string `json:"name" validate:"required,notblank,max=100"`
	categoryFields
}

type updateCategoryRequest struct {
	Name *string `json:"name" validate:"omitnil,notblank,max=100"`
	categoryFields
}

// listCategories lists the workspace's categories by position, then name.
// Not paginated (a help center has a handful), but in the list envelope.
func (h *handlers) listCategories(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	var rows []models.KBCategory
	if err := h.DB.WithContext(c.UserContext()).Where("org_id = ?", p.OrgID).
		Order("position").Order("name").Order("id").Find(&rows).Error; err != nil {
		return err
	}
	return web.SendPage(c, web.Page[models.KBCategory]{Data: rows}, toCategory)
}

func (h *handlers) createCategory(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	var req createCategoryRequest
	var slug string
	if err := web.Decode(c, &req, func() (err error) {
		slug, err = slugFor(req.Slug, req.Name, "name")
		return err
	}); err != nil {
		return err
	}
	now := models.Now()
	k := &models.KBCategory{ID: models.NewID(), OrgID: p.OrgID, Name: strings.TrimSpace(req.Name), Slug: slug,
		CreatedAt: now, UpdatedAt: now}
	req.apply(k)
	if err := saveUnique(func() error { return h.DB.WithContext(c.UserContext()).Create(k).Error }, "category", k.Slug); err != nil {
		return err
	}
	c.Location("/helpdesk/knowledge-base/categories/" + k.ID)
	return c.Status(fiber.StatusCreated).JSON(toCategory(k))
}

// updateCategory changes the fields sent; absent or null fields keep their
// value. A new name does not change the slug.
func (h *handlers) updateCategory(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	var req updateCategoryRequest
	if err := web.Decode(c, &req, func() error { return checkSlug(req.Slug) }); err != nil {
		return err
	}
	var k *models.KBCategory
	err = h.DB.WithContext(c.UserContext()).Transaction(func(tx *gorm.DB) error {
		var err error
		if k, err = findIn[models.KBCategory](c.UserContext(), models.LockForUpdate(tx), p.OrgID, c.Params("id"), "The category"); err != nil {
			return err
		}
		if req.Name != nil {
			k.Name = strings.TrimSpace(*req.Name)
		}
		if req.Slug != nil {
			k.Slug = *req.Slug
		}
		req.apply(k)
		k.UpdatedAt = models.Now()
		return saveUnique(func() error { return tx.Save(k).Error }, "category", k.Slug)
	})
	if err != nil {
		return err
	}
	return c.JSON(toCategory(k))
}

// getCategory returns one category.
func (h *handlers) getCategory(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	return getIn(c, h.DB, p.OrgID, "The category", toCategory)
}

// deleteCategory deletes a category; its articles keep existing without a
// category (ON DELETE SET NULL).
func (h *handlers) deleteCategory(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	id := c.Params("id")
	if !models.ValidID(id) {
		return models.Err(models.ErrNotFound, "not_found", "The category was not found.")
	}
	res := h.DB.WithContext(c.UserContext()).Where("id = ? AND org_id = ?", id, p.OrgID).Delete(&models.KBCategory{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return models.Err(models.ErrNotFound, "not_found", "The category was not found.")
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// ------------------------------------------------------------------ articles

type articleFields struct {
	Slug       *string `json:"slug"` // checked by checkSlug
	Body       *string `json:"body" validate:"omitnil,max=100000"`
	Status     *string `json:"status" validate:"omitnil,oneof=draft published"`
	CategoryID *string `json:"categoryId"` // checked by checkCategory
}

type createArticleRequest struct {
	Title string `json:"title" validate:"required,notblank,max=300"`
	articleFields
}

type updateArticleRequest struct {
	Title *string `json:"title" validate:"omitnil,notblank,max=300"`
	articleFields
}

// checkCategory fails with 422 on categoryId unless it names a category of
// the workspace; "" means none. A malformed id gets the same answer.
func (h *handlers) checkCategory(c *fiber.Ctx, orgID string, id *string) error {
	if id == nil || *id == "" {
		return nil
	}
	if models.ValidID(*id) {
		var n int64
		if err := h.DB.WithContext(c.UserContext()).Model(&models.KBCategory{}).
			Where("id = ? AND org_id = ?", *id, orgID).Count(&n).Error; err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
	}
	return models.Invalid(models.FieldError{Field: "categoryId", Code: "not_found",
		Message: "Must be the id of a category of this workspace."})
}

// apply copies the fields present onto a (not the slug). Publishing for the
// first time sets publishedAt; unpublishing keeps it.
func (f *articleFields) apply(a *models.KBArticle, now time.Time) error {
	if f.Body != nil && (*f.Body != a.Body || a.BodyHTML == "") {
		rendered, err := renderMarkdown(*f.Body)
		if err != nil {
			return err
		}
		a.Body, a.BodyHTML, a.BodyText = *f.Body, rendered, models.MarkdownText(*f.Body)
	}
	if f.Status != nil {
		a.Status = *f.Status
	}
	if a.Status == models.ArticlePublished && a.PublishedAt == nil {
		a.PublishedAt = &now
	}
	if f.CategoryID != nil {
		if *f.CategoryID == "" {
			a.CategoryID = nil
		} else {
			id := *f.CategoryID
			a.CategoryID = &id
		}
	}
	return nil
}

// listArticles lists the workspace's articles, newest first, optionally of
// one status and one category.
func (h *handlers) listArticles(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	page, pageErr := web.ParsePage(c)
	var filter struct {
		Status     string `json:"status" validate:"omitempty,oneof=draft published"`
		CategoryID string `json:"categoryId" validate:"omitempty,uuid"`
	}
	filter.Status, filter.CategoryID = c.Query("status"), c.Query("categoryId")
	if err := web.MergeInvalid(pageErr, web.Validate(&filter)); err != nil {
		return err
	}
	q := h.DB.WithContext(c.UserContext()).Model(&models.KBArticle{}).Where("org_id = ?", p.OrgID)
	if filter.Status != "" {
		q = q.Where("status = ?", filter.Status)
	}
	if filter.CategoryID != "" {
		q = q.Where("category_id = ?", filter.CategoryID)
	}
	rows, err := web.Paginate(q, page, articleCursor)
	if err != nil {
		return err
	}
	return web.SendPage(c, rows, toArticle)
}

func (h *handlers) createArticle(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	var req createArticleRequest
	var slug string
	if err := web.Decode(c, &req,
		func() (err error) {
			slug, err = slugFor(req.Slug, req.Title, "title")
			return err
		},
		func() error { return h.checkCategory(c, p.OrgID, req.CategoryID) },
	); err != nil {
		return err
	}
	now := models.Now()
	a := &models.KBArticle{ID: models.NewID(), OrgID: p.OrgID, Title: strings.TrimSpace(req.Title), Slug: slug,
		Status: models.ArticleDraft, CreatedAt: now, UpdatedAt: now}
	if req.Body == nil {
		empty := ""
		req.Body = &empty
	}
	if err := req.apply(a, now); err != nil {
		return err
	}
	if err := saveUnique(func() error { return h.DB.WithContext(c.UserContext()).Create(a).Error }, "article", a.Slug); err != nil {
		return err
	}
	c.Location("/helpdesk/knowledge-base/articles/" + a.ID)
	return c.Status(fiber.StatusCreated).JSON(toArticle(a))
}

func (h *handlers) getArticle(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	return getIn(c, h.DB, p.OrgID, "The article", toArticle)
}

// updateArticle changes the fields sent; absent or null fields keep their
// value, and categoryId "" removes the article from its category. A new
// title does not change the slug.
func (h *handlers) updateArticle(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	var req updateArticleRequest
	if err := web.Decode(c, &req,
		func() error { return checkSlug(req.Slug) },
		func() error { return h.checkCategory(c, p.OrgID, req.CategoryID) },
	); err != nil {
		return err
	}
	var a *models.KBArticle
	err = h.DB.WithContext(c.UserContext()).Transaction(func(tx *gorm.DB) error {
		var err error
		if a, err = findIn[models.KBArticle](c.UserContext(), models.LockForUpdate(tx), p.OrgID, c.Params("id"), "The article"); err != nil {
			return err
		}
		if req.Title != nil {
			a.Title = strings.TrimSpace(*req.Title)
		}
		if req.Slug != nil {
			a.Slug = *req.Slug
		}
		now := models.Now()
		if err := req.apply(a, now); err != nil {
			return err
		}
		a.UpdatedAt = now
		// Views are counted concurrently by public reads: never write them back.
		return saveUnique(func() error {
			return tx.Model(a).Select("title", "slug", "body", "body_html", "status", "category_id", "published_at", "updated_at").
				Updates(a).Error
		}, "article", a.Slug)
	})
	if err != nil {
		return err
	}
	return c.JSON(toArticle(a))
}

func (h *handlers) deleteArticle(c *fiber.Ctx) error {
	p, err := kbPrincipal(c)
	if err != nil {
		return err
	}
	id := c.Params("id")
	if !models.ValidID(id) {
		return models.Err(models.ErrNotFound, "not_found", "The article was not found.")
	}
	res := h.DB.WithContext(c.UserContext()).Where("id = ? AND org_id = ?", id, p.OrgID).Delete(&models.KBArticle{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return models.Err(models.ErrNotFound, "not_found", "The article was not found.")
	}
	return c.SendStatus(fiber.StatusNoContent)
}
