package helpdesk

import (
	"cmp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/views"
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

func articleCursor(a *models.KBArticle) web.Cursor {
	return web.Cursor{CreatedAt: a.CreatedAt, ID: a.ID}
}

// checkSlug validates a slug sent by the client (nil: none sent).
func checkSlug(slug *string) error {
	if slug == nil || models.ValidSlug(*slug) {
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
	if s := models.Slugify(text); s != "" {
		return s, nil
	}
	return "", models.Invalid(models.FieldError{Field: "slug", Code: "required",
		Message: "No slug can be derived from the " + from + " (it has no ASCII letter or digit); send one."})
}

func slugTaken(what, slug string) error {
	return models.Err(models.ErrConflict, "slug_taken", "Another %s of this workspace already has the slug %q.", what, slug)
}

// slugUnique turns the unique violation of a write (the slug index) into
// a 409 slug_taken.
func slugUnique(err error, what, slug string) error {
	if err != nil && database.IsUniqueViolation(err) {
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
	var rows []models.KBCategory
	if err := workspace(c).Narrow(h.DB.WithContext(c.UserContext())).
		Order("position").Order("name").Order("id").Find(&rows).Error; err != nil {
		return err
	}
	return web.SendPage(c, web.Page[models.KBCategory]{Data: rows}, toCategory)
}

func (h *handlers) createCategory(c *fiber.Ctx) error {
	p := auth.From(c)
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
	if err := slugUnique(web.Tx(c).Create(k).Error, "category", k.Slug); err != nil {
		return err
	}
	c.Location("/helpdesk/knowledge-base/categories/" + k.ID)
	return c.Status(fiber.StatusCreated).JSON(toCategory(k))
}

// updateCategory changes the fields sent; absent or null fields keep their
// value. A new name does not change the slug.
func (h *handlers) updateCategory(c *fiber.Ctx) error {
	var req updateCategoryRequest
	if err := web.Decode(c, &req, func() error { return checkSlug(req.Slug) }); err != nil {
		return err
	}
	k, err := web.Update(c, workspace(c), "The category", func(tx *gorm.DB, k *models.KBCategory) error {
		if req.Name != nil {
			k.Name = strings.TrimSpace(*req.Name)
		}
		if req.Slug != nil {
			k.Slug = *req.Slug
		}
		req.apply(k)
		k.UpdatedAt = models.Now()
		return nil
	})
	if err != nil {
		return slugUnique(err, "category", *cmp.Or(req.Slug, new(string)))
	}
	return c.JSON(toCategory(k))
}

// getCategory returns one category.
func (h *handlers) getCategory(c *fiber.Ctx) error {
	return web.Get(c, h.DB, inWorkspace, "The category", toCategory)
}

// deleteCategory deletes a category; its articles keep existing without a
// category (ON DELETE SET NULL).
func (h *handlers) deleteCategory(c *fiber.Ctx) error {
	return web.Delete[models.KBCategory](c, inWorkspace, "The category")
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

// apply copies the fields present onto a (not the slug). Publishing for the
// first time sets publishedAt; unpublishing keeps it.
func (f *articleFields) apply(a *models.KBArticle, now time.Time) error {
	if f.Body != nil && (*f.Body != a.Body || a.BodyHTML == "") {
		rendered, err := models.RenderMarkdown(*f.Body)
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
	var f struct {
		Status     string `json:"status" validate:"omitempty,oneof=draft published"`
		CategoryID string `json:"categoryId" validate:"omitempty,uuid"`
	}
	return web.List(c, h.DB, inWorkspace, web.Listing[models.KBArticle, views.Article]{Filter: &f, Cursor: articleCursor, View: views.ToArticle,
		Narrow: func(q *gorm.DB) *gorm.DB {
			return models.Equal(models.Equal(q, "status", f.Status), "category_id", f.CategoryID)
		}})
}

func (h *handlers) createArticle(c *fiber.Ctx) error {
	p := auth.From(c)
	var req createArticleRequest
	var slug string
	if err := web.Decode(c, &req,
		func() (err error) {
			slug, err = slugFor(req.Slug, req.Title, "title")
			return err
		},
		func() error {
			return models.CheckReference(h.DB.WithContext(c.UserContext()), &models.KBCategory{}, p.OrgID, "categoryId", req.CategoryID,
				"a category of this workspace")
		},
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
	if err := slugUnique(web.Tx(c).Create(a).Error, "article", a.Slug); err != nil {
		return err
	}
	c.Location("/helpdesk/knowledge-base/articles/" + a.ID)
	return c.Status(fiber.StatusCreated).JSON(views.ToArticle(a))
}

func (h *handlers) getArticle(c *fiber.Ctx) error {
	return web.Get(c, h.DB, inWorkspace, "The article", views.ToArticle)
}

// updateArticle changes the fields sent; absent or null fields keep their
// value, and categoryId "" removes the article from its category. A new
// title does not change the slug.
func (h *handlers) updateArticle(c *fiber.Ctx) error {
	p := auth.From(c)
	var req updateArticleRequest
	if err := web.Decode(c, &req,
		func() error { return checkSlug(req.Slug) },
		func() error {
			return models.CheckReference(h.DB.WithContext(c.UserContext()), &models.KBCategory{}, p.OrgID, "categoryId", req.CategoryID,
				"a category of this workspace")
		},
	); err != nil {
		return err
	}
	// Views are counted concurrently by public reads: never written back.
	a, err := web.Update(c, workspace(c), "The article", func(tx *gorm.DB, a *models.KBArticle) error {
		if req.Title != nil {
			a.Title = strings.TrimSpace(*req.Title)
		}
		if req.Slug != nil {
			a.Slug = *req.Slug
		}
		now := models.Now()
		a.UpdatedAt = now
		return req.apply(a, now)
	}, "views")
	if err != nil {
		return slugUnique(err, "article", *cmp.Or(req.Slug, new(string)))
	}
	return c.JSON(views.ToArticle(a))
}

func (h *handlers) deleteArticle(c *fiber.Ctx) error {
	return web.Delete[models.KBArticle](c, inWorkspace, "The article")
}
