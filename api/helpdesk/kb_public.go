package helpdesk

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
)

// The public help center: published articles of a workspace, read without
// a credential (PublicRoutes rate-limits them per client address). An
// unknown or malformed workspace id, an unknown slug and a draft all get
// the same 404, so a reader learns nothing about what is not published.

var errHelpCenterNotFound = models.NotFound("The help-center page")

// Search limits.
const (
	maxSearchQuery     = 200
	defaultSearchLimit = 10
	maxSearchLimit     = 50
)

type publicCategoryResponse struct {
	categoryResponse
	ArticleCount int64 `json:"articleCount"`
}

type publicArticleResponse struct {
	ID          string     `json:"id"`
	WorkspaceID string     `json:"workspaceId"`
	CategoryID  *string    `json:"categoryId"`
	Title       string     `json:"title"`
	Slug        string     `json:"slug"`
	BodyHTML    string     `json:"bodyHtml"`
	Views       int64      `json:"views"`
	PublishedAt *time.Time `json:"publishedAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

type searchHit struct {
	ID         string  `json:"id"`
	Title      string  `json:"title"`
	Slug       string  `json:"slug"`
	CategoryID *string `json:"categoryId"`
	Snippet    string  `json:"snippet"`
	Rank       float64 `json:"rank"`
}

type searchResponse struct {
	Data  []searchHit `json:"data"`
	Query string      `json:"query"`
}

// publicWorkspace checks the :workspaceId of a public route.
func (h *handlers) publicWorkspace(c *fiber.Ctx) (string, error) {
	id := c.Params("workspaceId")
	if _, err := models.FindOrg(c.UserContext(), h.DB, id); err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return "", errHelpCenterNotFound
		}
		return "", err
	}
	return id, nil
}

// publicCategories lists the categories that hold at least one published
// article, with how many, by position then name.
func (h *handlers) publicCategories(c *fiber.Ctx) error {
	orgID, err := h.publicWorkspace(c)
	if err != nil {
		return err
	}
	var rows []struct {
		models.KBCategory
		ArticleCount int64
	}
	err = h.DB.WithContext(c.UserContext()).Table("kb_categories AS c").
		Select("c.*, COUNT(a.id) AS article_count").
		Joins("JOIN kb_articles a ON a.category_id = c.id AND a.status = ?", models.ArticlePublished).
		Where("c.org_id = ?", orgID).
		Group("c.id").Order("c.position").Order("c.name").Order("c.id").
		Scan(&rows).Error
	if err != nil {
		return err
	}
	out := web.Page[publicCategoryResponse]{Data: make([]publicCategoryResponse, len(rows))}
	for i := range rows {
		out.Data[i] = publicCategoryResponse{categoryResponse: toCategory(&rows[i].KBCategory), ArticleCount: rows[i].ArticleCount}
	}
	return c.JSON(out)
}

// publicArticle serves a published article by slug and counts the view.
func (h *handlers) publicArticle(c *fiber.Ctx) error {
	orgID, slug := c.Params("workspaceId"), c.Params("slug")
	if !models.ValidID(orgID) || !models.ValidSlug(slug) {
		return errHelpCenterNotFound
	}
	db := h.DB.WithContext(c.UserContext())
	// One atomic statement counts the view and tells whether the article is
	// there: no read-modify-write race between concurrent readers.
	res := db.Exec("UPDATE kb_articles SET views = views + 1 WHERE org_id = ? AND slug = ? AND status = ?",
		orgID, slug, models.ArticlePublished)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return errHelpCenterNotFound
	}
	var a models.KBArticle
	if err := db.Where("org_id = ? AND slug = ? AND status = ?", orgID, slug, models.ArticlePublished).Take(&a).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return errHelpCenterNotFound // unpublished or deleted meanwhile
		}
		return err
	}
	return c.JSON(publicArticleResponse{ID: a.ID, WorkspaceID: a.OrgID, CategoryID: a.CategoryID, Title: a.Title, Slug: a.Slug,
		BodyHTML: a.BodyHTML, Views: a.Views, PublishedAt: a.PublishedAt, UpdatedAt: a.UpdatedAt})
}

// publicSearch is ranked full-text search over the published articles of a
// workspace: best first, with the matches in the snippet wrapped in <mark>.
func (h *handlers) publicSearch(c *fiber.Ctx) error {
	orgID, err := h.publicWorkspace(c)
	if err != nil {
		return err
	}
	q, qErr := searchText(c.Query("q"))
	limit := defaultSearchLimit
	var bad []models.FieldError
	if qErr != nil {
		bad = append(bad, *qErr)
	}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxSearchLimit {
			bad = append(bad, models.FieldError{Field: "limit", Code: "range", Message: "Must be an integer from 1 to 50."})
		}
		limit = n
	}
	if len(bad) > 0 {
		return models.Invalid(bad...)
	}

	hits, err := searchArticles(h.DB.WithContext(c.UserContext()), orgID, q, limit)
	if err != nil {
		return err
	}
	return c.JSON(searchResponse{Data: hits, Query: q})
}

// searchText is the text to search for in q: control characters and
// invalid UTF-8 stripped (models.CleanText), spaces trimmed, 1 to
// maxSearchQuery characters.
func searchText(q string) (string, *models.FieldError) {
	q = strings.TrimSpace(models.CleanText(q))
	if n := utf8.RuneCountInString(q); n == 0 || n > maxSearchQuery {
		return q, &models.FieldError{Field: "q", Code: "length", Message: "Send 1 to 200 characters to search for."}
	}
	return q, nil
}

// searchArticles runs a search (q as searchText returns it) over the
// published articles of orgID, best first, snippets highlighted.
func searchArticles(db *gorm.DB, orgID, q string, limit int) ([]searchHit, error) {
	rows, err := models.SearchArticles(db, orgID, q, limit)
	if err != nil {
		return nil, err
	}
	hits := make([]searchHit, len(rows))
	for i, r := range rows {
		hits[i] = searchHit{ID: r.ID, Title: r.Title, Slug: r.Slug, CategoryID: r.CategoryID, Rank: r.Rank, Snippet: highlight(r.Snippet)}
	}
	return hits, nil
}
