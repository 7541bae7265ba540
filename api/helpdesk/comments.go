package helpdesk

import (
	"cmp"
	"errors"
	"mime"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/auth"
	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

func (h *handlers) listComments(c *fiber.Ctx) error {
	t, err := web.Load[models.Ticket](c, h.DB, inWorkspace, "The ticket")
	if err != nil {
		return err
	}
	return web.List(c, h.DB, inWorkspace, web.Listing[models.TicketComment, views.Comment]{
		PageView: func(rows []models.TicketComment) (func(*models.TicketComment) views.Comment, error) {
			return commentView(h.DB.WithContext(c.UserContext()), rows)
		},
		Narrow: func(q *gorm.DB) *gorm.DB { return q.Where("ticket_id = ?", t.ID) },
		Cursor: func(cm *models.TicketComment) web.Cursor { return web.Cursor{CreatedAt: cm.CreatedAt, ID: cm.ID} }})
}

// commentView is the view of comments, with their e-mails and attachments
// read on db for all of them at once.
func commentView(db *gorm.DB, comments []models.TicketComment) (func(*models.TicketComment) views.Comment, error) {
	ids := make([]string, len(comments))
	for i := range comments {
		ids[i] = comments[i].ID
	}
	sent, err := models.EmailsSentForComments(db, ids)
	if err != nil {
		return nil, err
	}
	files, err := models.AttachmentsOfComments(db, ids)
	if err != nil {
		return nil, err
	}
	return views.Comments(sent, files), nil
}

type ticketAttachmentResponse struct {
	views.Attachment
	// CommentID is the comment the file came with (null: the ticket's
	// first message, its description).
	CommentID *string   `json:"commentId"`
	CreatedAt time.Time `json:"createdAt"`
}

// listAttachments lists every file that came by e-mail with the ticket's
// messages, oldest first (a ticket has a handful: not paginated, but in
// the list envelope).
func (h *handlers) listAttachments(c *fiber.Ctx) error {
	t, err := web.Load[models.Ticket](c, h.DB, inWorkspace, "The ticket")
	if err != nil {
		return err
	}
	var files []models.TicketAttachment
	if err := h.DB.WithContext(c.UserContext()).Select("id, comment_id, filename, content_type, size, created_at").
		Where("ticket_id = ?", t.ID).Order("created_at, id").Find(&files).Error; err != nil {
		return err
	}
	return web.SendPage(c, web.Page[models.TicketAttachment]{Data: files}, func(f *models.TicketAttachment) ticketAttachmentResponse {
		return ticketAttachmentResponse{Attachment: views.Attachment{ID: f.ID, Filename: f.Filename, ContentType: f.ContentType,
			Size: f.Size}, CommentID: f.CommentID, CreatedAt: f.CreatedAt}
	})
}

// attachment sends a file that came with a reply by e-mail; it is a
// download, never shown in place (its type is what the sender said).
func (h *handlers) attachment(c *fiber.Ctx) error {
	t, err := web.Load[models.Ticket](c, h.DB, inWorkspace, "The ticket")
	if err != nil {
		return err
	}
	id := c.Params("attachmentId")
	if !models.ValidID(id) {
		return models.NotFound("The attachment")
	}
	var a models.TicketAttachment
	if err := h.DB.WithContext(c.UserContext()).Take(&a, "id = ? AND ticket_id = ?", id, t.ID).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.NotFound("The attachment")
		}
		return err
	}
	c.Set(fiber.HeaderContentType, "application/octet-stream")
	c.Set(fiber.HeaderContentDisposition, mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	c.Set("X-Content-Type-Options", "nosniff")
	return c.Send(a.Content)
}

type addCommentRequest struct {
	Body   string `json:"body" validate:"required,notblank,max=20000"`
	Public *bool  `json:"public"`
	// Author is "agent" (the caller; default) or "customer" (the ticket's
	// requester, e.g. a reply relayed by an e-mail integration).
	Author string `json:"author" validate:"omitempty,oneof=agent customer"`
}

// addComment adds a reply or internal note. The first public agent reply
// records the first-response time; a customer reply is always public,
// reopens a pending, on-hold or solved ticket and notifies the assignee.
func (h *handlers) addComment(c *fiber.Ctx) error {
	p := auth.From(c)
	var req addCommentRequest
	if err := web.Decode(c, &req, func() error {
		if req.Author == models.AuthorCustomer && req.Public != nil && !*req.Public {
			return models.Invalid(models.FieldError{Field: "public", Code: "customer_public", Message: "A customer's comment is always public."})
		}
		return nil
	}); err != nil {
		return err
	}
	now := models.Now()
	cm := &models.TicketComment{ID: models.NewID(), OrgID: p.OrgID, AuthorType: cmp.Or(req.Author, models.AuthorAgent),
		Body: req.Body, Public: req.Public == nil || *req.Public, CreatedAt: now}
	if cm.AuthorType == models.AuthorAgent && !p.IsKey() {
		cm.AuthorMemberID = &p.MemberID
	}
	tx := h.Starter.In(c, web.Tx(c))
	t, change, err := models.AddTicketComment(tx.DB, p.OrgID, c.Params("id"), cm, p.Actor(), now)
	if err != nil {
		return err
	}
	if cm.AuthorType == models.AuthorCustomer && change.Notify != nil {
		if _, err := tx.Notify(models.CustomerRepliedNotice(t, *change.Notify, now)); err != nil {
			return err
		}
	}
	if err := h.followStatus(tx, t, change); err != nil {
		return err
	}
	if err := h.emailReply(tx, t, cm, now); err != nil {
		return err
	}
	view, err := commentView(tx.DB, []models.TicketComment{*cm})
	if err != nil {
		return err
	}
	shown := view(cm)
	if err := tx.Emit(models.Event{OrgID: t.OrgID, Type: models.EventTicketCommentCreated, Object: shown, Subject: views.ToTicket(t)}); err != nil {
		return err
	}
	if err := emitTicketChange(tx, &change.Before, t); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(shown)
}

// emailReply records, in tx, the e-mail of a public agent reply to the
// ticket's requester — queued, under the Message-ID it will be sent with —
// and its EmailSend workflow's start, when the server sends mail. Internal
// notes and customers' comments are never sent.
func (h *handlers) emailReply(tx *record.Tx, t *models.Ticket, cm *models.TicketComment, now time.Time) error {
	if !h.MailOutbound || h.MailDomain == "" {
		return nil
	}
	return tx.EmailReply(t, cm, h.MailDomain, now)
}
