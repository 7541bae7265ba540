package models

import (
	"gorm.io/gorm"
)

// Knowledge-base articles import as new articles of the workspace: the
// body is Markdown, rendered and indexed as an article written in the API
// is; the slug is the row's, or derived from its title, and unique in the
// workspace (a row whose slug an article has, or an earlier row of the
// file took, fails); a published one was published when it was created.
// A category is named by its id (categories are few: they are made first,
// in the API).

var articleImport = ImportObject{
	Name: "articles", App: "helpdesk", FieldObject: "article",
	Columns: []ImportColumn{
		{Field: "title", Max: 300, Required: true},
		{Field: "slug", Max: MaxSlugLen, Check: importedSlug},
		{Field: "body", Max: 100_000},
		{Field: "status", Max: 10, Check: oneOf(ArticleDraft, ArticlePublished)},
		{Field: "categoryId", Max: 36, Check: anID},
		{Field: "createdAt", Max: 40, Check: importedTime},
	},
	Ignored:       []string{"id", "workspaceId", "bodyHtml", "views", "publishedAt", "updatedAt"},
	write:         writeArticles,
	ExportColumns: []string{"id", "title", "slug", "body", "status", "categoryId", "views", "publishedAt", "createdAt", "updatedAt"},
	Filters:       []string{"status", "categoryId", "q"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		q = Equal(Equal(q.Model(&KBArticle{}), "status", f["status"]), "category_id", f["categoryId"])
		return Containing(q, f["q"], "title", "body")
	},
}

// importedSlug checks a slug as the API does.
func importedSlug(v string) (string, string) {
	if !ValidSlug(v) {
		return "", "Must be lower-case ASCII letters and digits in groups joined by single hyphens (e.g. getting-started)."
	}
	return v, ""
}

func writeArticles(w *importWriter, rows []ImportRow) error {
	slugs := make([]string, len(rows))
	for i := range rows {
		if slugs[i] = rows[i].Values["slug"]; slugs[i] == "" {
			slugs[i] = Slugify(rows[i].Values["title"])
		}
	}
	var taken, categories []string
	if err := w.tx.Model(&KBArticle{}).Where("org_id = ? AND slug IN ?", w.imp.OrgID, slugs).Pluck("slug", &taken).Error; err != nil {
		return err
	}
	if err := w.tx.Model(&KBCategory{}).Where("org_id = ? AND id IN ?", w.imp.OrgID, valuesOf(rows, "categoryId")).
		Pluck("id", &categories).Error; err != nil {
		return err
	}
	slugTaken, category := set(taken...), set(categories...)
	var articles []*KBArticle
	for i := range rows {
		r := &rows[i]
		var bad []FieldError
		switch slug := slugs[i]; {
		case slug == "":
			bad = append(bad, FieldError{Field: "slug", Code: "required", Message: "No slug can be derived from the title (it has no ASCII letter or digit); give one."})
		case slugTaken[slug]:
			bad = append(bad, FieldError{Field: "slug", Code: "slug_taken", Message: "Another article of this workspace has this slug."})
		}
		if id := r.Values["categoryId"]; id != "" && !category[id] {
			bad = append(bad, FieldError{Field: "categoryId", Code: "not_found", Message: "Must be the id of a category of this workspace."})
		}
		html, err := RenderMarkdown(r.Values["body"])
		if err != nil {
			bad = append(bad, FieldError{Field: "body", Code: "invalid", Message: "Not Markdown that renders."})
		}
		if len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, bad)
			continue
		}
		a := &KBArticle{ID: NewID(), OrgID: w.imp.OrgID, Title: r.Values["title"], Slug: slugs[i], Body: r.Values["body"], BodyHTML: html,
			BodyText: MarkdownText(r.Values["body"]), Status: ArticleDraft, CreatedAt: w.createdAt(r), UpdatedAt: w.now}
		setCell(&a.Status, r, "status")
		if id := r.Values["categoryId"]; id != "" {
			a.CategoryID = &id
		}
		if a.Status == ArticlePublished {
			published := a.CreatedAt
			a.PublishedAt = &published
		}
		slugTaken[a.Slug] = true
		articles = append(articles, a)
		w.batch.Progress.Created++
	}
	if len(articles) == 0 {
		return nil
	}
	return w.tx.CreateInBatches(articles, importInsertBatch).Error
}
