package models

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// AIDocument is text to work on, or a reference (Source, SourceID) to a
// record of the suite whose text is assembled when a job runs.
type AIDocument struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	Title       string
	Content     string
	ContentType string
	Source      string
	SourceID    *string
	CreatedBy   Actor
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ContentBytesSQL is the SQL expression for the byte size of a document's
// content in db's dialect: octet_length in PostgreSQL; SQLite's length
// counts bytes only of a blob.
func ContentBytesSQL(db *gorm.DB) string {
	if database.DialectFor(db) == database.SQLite {
		return "length(CAST(content AS BLOB))"
	}
	return "octet_length(content)"
}

// TableName is ai_documents.
func (AIDocument) TableName() string { return "ai_documents" }

// NewAIDocument is what a caller sends to create a document.
type NewAIDocument struct {
	OrgID       string
	Title       string
	Content     string
	ContentType string
	Source      string
	SourceID    string
	CreatedBy   Actor
}

// CreateAIDocument validates and stores a document. A referenced record
// must exist in the same organization (another organization's record is
// not found); its title becomes the document's title unless one is given.
func CreateAIDocument(ctx context.Context, db *gorm.DB, in NewAIDocument) (*AIDocument, error) {
	if err := ValidateAIDocument(&in); err != nil {
		return nil, err
	}
	now := Now()
	doc := &AIDocument{ID: NewID(), OrgID: in.OrgID, Title: strings.TrimSpace(in.Title), Content: in.Content,
		ContentType: in.ContentType, Source: in.Source, CreatedBy: in.CreatedBy, CreatedAt: now, UpdatedAt: now}
	if in.Source != "" {
		src, err := LoadAISource(ctx, db, in.OrgID, in.Source, in.SourceID, time.UTC)
		if err != nil {
			return nil, err
		}
		id := in.SourceID
		doc.SourceID = &id
		if doc.Title == "" {
			doc.Title = src.Title
		}
	} else if doc.Title == "" {
		doc.Title = titleFromText(in.Content)
	}
	return doc, db.WithContext(ctx).Create(doc).Error
}

// ValidateAIDocument checks a document request without touching the
// database (a referenced record is looked up by CreateAIDocument) and
// defaults its content type; every bad field is reported at once.
func ValidateAIDocument(in *NewAIDocument) error {
	var bad []FieldError
	if utf8.RuneCountInString(in.Title) > AIMaxTitleChars {
		bad = append(bad, FieldError{Field: "title", Code: "max", Message: "At most 200 characters."})
	}
	switch {
	case in.Source == "" && in.Content == "":
		bad = append(bad, FieldError{Field: "content", Code: "required", Message: "Send content, or a source and source_id."})
	case in.Source != "" && in.Content != "":
		bad = append(bad, FieldError{Field: "content", Code: "excluded_with", Message: "Send either content or a source, not both."})
	case in.Content != "":
		if len(in.Content) > AIMaxContentBytes {
			bad = append(bad, FieldError{Field: "content", Code: "max", Message: "At most 1 MiB (1,048,576 bytes)."})
		}
		if strings.TrimSpace(in.Content) == "" {
			bad = append(bad, FieldError{Field: "content", Code: "required", Message: "Must contain text."})
		}
		if !utf8.ValidString(in.Content) {
			bad = append(bad, FieldError{Field: "content", Code: "utf8", Message: "Must be UTF-8 text."})
		}
		if in.ContentType == "" {
			in.ContentType = "text/plain"
		}
		if !slices.Contains(AIContentTypes, in.ContentType) {
			bad = append(bad, FieldError{Field: "content_type", Code: "oneof", Message: "Must be one of: text/plain, text/markdown."})
		}
		if in.SourceID != "" {
			bad = append(bad, FieldError{Field: "source_id", Code: "excluded_with", Message: "Only a document with a source has a source_id."})
		}
	default: // a reference
		if !slices.Contains(AISources, in.Source) {
			bad = append(bad, FieldError{Field: "source", Code: "oneof", Message: "Must be one of: ticket, lead, customer, kb_article."})
		}
		if in.SourceID == "" {
			bad = append(bad, FieldError{Field: "source_id", Code: "required", Message: "Name the record to reference."})
		}
		if in.ContentType != "" {
			bad = append(bad, FieldError{Field: "content_type", Code: "excluded_with", Message: "A referenced record has no content_type."})
		}
	}
	if len(bad) > 0 {
		return Invalid(bad...)
	}
	return nil
}

// titleFromText is the first non-blank line, without Markdown heading
// marks, cut at 80 characters.
func titleFromText(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > 80 {
			return strings.TrimSpace(string(r[:79])) + "…"
		}
		return line
	}
	return ""
}

// FindAIDocument loads one of orgID's documents.
func FindAIDocument(ctx context.Context, db *gorm.DB, orgID, id string) (*AIDocument, error) {
	return FindInOrg[AIDocument](db.WithContext(ctx), orgID, id, "The document")
}

// DeleteAIDocument deletes one of orgID's documents. Its jobs keep the text
// they processed; a job still queued for it fails with source_not_found.
func DeleteAIDocument(ctx context.Context, db *gorm.DB, orgID, id string) error {
	if !ValidID(id) {
		return NotFound("The document")
	}
	res := db.WithContext(ctx).Where("id = ? AND org_id = ?", id, orgID).Delete(&AIDocument{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return NotFound("The document")
	}
	return nil
}
