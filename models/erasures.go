package models

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"gorm.io/gorm"
)

// A person's erasure (GDPR article 17): an OWNER asks for everything the
// organization holds about the person of an e-mail address to be erased
// (RequestErasure: a pending erasure, what it would erase counted, and a
// confirmation token), then confirms with the token (ConfirmErasure: the
// address is blocked from intake at once, and the Erasure workflow runs
// the steps of ErasureSteps, each one transaction that finds the person
// again, so that a step retried after a fault erases what is left). The
// erasure ends (FinishErasure) as the record of who asked, who confirmed
// and when, with how many rows of each kind went — without the address,
// which is held only while the erasure runs. Intake refuses the address
// until BlockedUntil (AddressErased): a lead from the web form, a ticket
// by e-mail or by the API, a row of an import.

// An erasure's state.
const (
	ErasurePending = "pending"
	ErasureRunning = "running"
	ErasureDone    = "done"
)

// ErasureConfirmWithin is how long a requested erasure waits for its
// confirmation; after it, the request (with the address) is deleted.
const ErasureConfirmWithin = 15 * time.Minute

// ErasureBlock is how long intake refuses an erased address: the weeks in
// which a web form cached in a browser, a mail client's retry or an old
// spreadsheet re-imported would bring the person back (as long as an
// import's record is kept). After it the person may come back of their
// own accord.
const ErasureBlock = 90 * 24 * time.Hour

// ErasureInput names an erasure: its Erasure workflow's input.
type ErasureInput struct {
	OrgID     string `json:"orgId"`
	ErasureID string `json:"erasureId"`
}

// Erasure is the record of one erasure.
type Erasure struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	EmailHash string
	// Email is the address while the erasure is pending or running; empty
	// once it is done.
	Email     string
	TokenHash string
	State     string
	// Found is what the request counted, Erased what the steps deleted or
	// anonymized: JSON objects of counts by kind.
	Found        string
	Erased       string
	RequestedBy  string
	ConfirmedBy  string
	CreatedAt    time.Time
	ConfirmBy    time.Time
	ConfirmedAt  *time.Time
	FinishedAt   *time.Time
	BlockedUntil *time.Time
}

// Counts is a JSON object of counts (Found, Erased) as a map.
func Counts(s string) map[string]int64 {
	out := map[string]int64{}
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// EmailHash is the form of an organization's address that an erasure
// keeps to block it: a hash of both, so that the same address in two
// organizations is not the same value.
func EmailHash(orgID, email string) string { return HashKey(orgID + "\x00" + NormalizeEmail(email)) }

// AddressErased tells whether intake must refuse email (normalized) in
// orgID, and until when.
func AddressErased(db *gorm.DB, orgID, email string) (*time.Time, error) {
	var e Erasure
	err := db.Select("blocked_until").Where("org_id = ? AND email_hash = ? AND blocked_until > ?", orgID, EmailHash(orgID, email), Now()).
		Order("blocked_until DESC").Limit(1).Find(&e).Error
	return e.BlockedUntil, err
}

// ErrAddressErased refuses to re-create a person erased until until.
func ErrAddressErased(until time.Time) error {
	return Err(ErrInvalid, "address_erased", "This address was erased on request; it cannot be added again before %s.",
		until.Format(time.RFC3339))
}

// RefuseErased is ErrAddressErased when email is blocked in orgID, nil
// when not.
func RefuseErased(db *gorm.DB, orgID, email string) error {
	until, err := AddressErased(db, orgID, email)
	if err != nil || until == nil {
		return err
	}
	return ErrAddressErased(*until)
}

// RefuseIntake ends the web-form submission in, from an erased address:
// refused, and its payload forgotten.
func RefuseIntake(tx *gorm.DB, in *LeadIntake) error {
	now := Now()
	return tx.Model(&LeadIntake{}).Where("id = ?", in.ID).
		Updates(map[string]any{"status": IntakeRefused, "payload": "{}", "processed_at": &now}).Error
}

// Counts are how many rows of each kind p holds, the kinds it has.
func (p *PersonData) Counts() map[string]int64 {
	out := map[string]int64{}
	add := func(kind string, n int) {
		if n > 0 {
			out[kind] = int64(n)
		}
	}
	add("contacts", len(p.Contacts))
	add("customers", len(p.Customers))
	add("leads", len(p.Leads))
	add("leadIntakes", len(p.LeadIntakes))
	add("deals", len(p.Deals))
	add("tasks", len(p.Tasks))
	add("tickets", len(p.Tickets))
	add("comments", len(p.Comments))
	add("emails", len(p.Emails)+len(p.InboundEmails))
	add("attachments", len(p.Attachments))
	add("timeEntries", len(p.TimeEntries))
	add("aiDocuments", len(p.AIDocuments))
	add("aiJobs", len(p.AIJobs))
	add("notifications", len(p.Notifications))
	add("webhookEvents", len(p.WebhookEvents))
	return out
}

// RequestErasure records a pending erasure of email in orgID asked for by
// actor, with what it would erase counted, and returns it with its
// confirmation token (shown once; the erasure keeps its hash).
func RequestErasure(tx *gorm.DB, orgID, email string, by Actor) (*Erasure, string, error) {
	email = NormalizeEmail(email)
	p, err := GatherPerson(tx, orgID, email)
	if err != nil {
		return nil, "", err
	}
	found, _ := json.Marshal(p.Counts())
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return nil, "", err
	}
	token := "erase_" + base64.RawURLEncoding.EncodeToString(secret)
	now := Now()
	e := &Erasure{ID: NewID(), OrgID: orgID, EmailHash: EmailHash(orgID, email), Email: email, TokenHash: HashKey(token),
		State: ErasurePending, Found: string(found), Erased: "{}", RequestedBy: string(by), CreatedAt: now,
		ConfirmBy: now.Add(ErasureConfirmWithin)}
	return e, token, tx.Create(e).Error
}

// ConfirmErasure confirms orgID's pending erasure of email whose token is
// token, by actor: it runs from now, and intake refuses the address from
// now on. A token that is not the pending erasure's of that address, or
// one past its time, is refused (422) and changes nothing.
func ConfirmErasure(tx *gorm.DB, orgID, email, token string, by Actor) (*Erasure, error) {
	var e Erasure
	err := LockForUpdate(tx).Where("org_id = ? AND token_hash = ? AND email_hash = ? AND state = ?",
		orgID, HashKey(token), EmailHash(orgID, email), ErasurePending).Limit(1).Find(&e).Error
	switch {
	case err != nil:
		return nil, err
	case e.ID == "":
		return nil, Err(ErrInvalid, "invalid_confirmation", "The token does not confirm an erasure of this address; ask again without a token.")
	case !Now().Before(e.ConfirmBy):
		return nil, Err(ErrInvalid, "confirmation_expired", "The confirmation expired at %s; ask again without a token.",
			e.ConfirmBy.Format(time.RFC3339))
	}
	now := Now()
	until := now.Add(ErasureBlock)
	e.State, e.TokenHash, e.ConfirmedBy, e.ConfirmedAt, e.BlockedUntil = ErasureRunning, "", string(by), &now, &until
	return &e, tx.Model(&e).Updates(map[string]any{"state": e.State, "token_hash": "", "confirmed_by": e.ConfirmedBy,
		"confirmed_at": e.ConfirmedAt, "blocked_until": e.BlockedUntil}).Error
}

// ErasureSteps are the Erasure workflow's steps, in order: what points at
// the person first (each step finds the rest of the person again, through
// the contacts and customers that the last steps delete), then the
// Helpdesk's, then the CRM's with the traces again and the exports.
var ErasureSteps = []string{"traces", "helpdesk", "crm"}

// EraseStep erases step of the person of e in one transaction, tx, and
// returns how many rows of each kind it deleted or anonymized. Run again,
// it finds what is left: nothing, once it has committed.
func EraseStep(tx *gorm.DB, e *Erasure, step string) (map[string]int64, error) {
	p, err := GatherPerson(tx, e.OrgID, e.Email)
	if err != nil {
		return nil, err
	}
	// Each step deletes rows of the kinds it lists (their children go by
	// ON DELETE CASCADE, the rows that point at them are unlinked by ON
	// DELETE SET NULL), then does what only it does.
	type rows struct {
		kind  string
		model any
		ids   []string
	}
	// The traces: what names or points at the person without being
	// their record.
	traces := []rows{
		{"webhookEvents", &WebhookEvent{}, idsOf(p.WebhookEvents, func(w *WebhookEvent) string { return w.ID })},
		{"notifications", &Notification{}, idsOf(p.Notifications, func(n *Notification) string { return n.ID })},
		{"leadIntakes", &LeadIntake{}, idsOf(p.LeadIntakes, func(in *LeadIntake) string { return in.ID })},
	}
	var deletes []rows
	var then func(out map[string]int64) error
	switch step {
	case "traces":
		deletes = append(traces,
			rows{"aiJobs", &AIJob{}, idsOf(p.AIJobs, func(j *AIJob) string { return j.ID })},
			rows{"aiDocuments", &AIDocument{}, idsOf(p.AIDocuments, func(d *AIDocument) string { return d.ID })},
			rows{"emails", &InboundEmail{}, idsOf(p.InboundEmails, func(m *InboundEmail) string { return m.ID })})
	case "helpdesk":
		// A ticket's comments, e-mails, files and time go with it.
		deletes = []rows{
			{"tickets", &Ticket{}, idsOf(p.Tickets, func(t *Ticket) string { return t.ID })},
			{"customers", &Customer{}, idsOf(p.Customers, func(c *Customer) string { return c.ID })},
		}
	case "crm":
		// The traces again: what a change made while the erasure ran (an
		// event, a notification) goes too.
		deletes = append([]rows{
			{"leads", &Lead{}, idsOf(p.Leads, func(l *Lead) string { return l.ID })},
			{"contacts", &Contact{}, idsOf(p.Contacts, func(c *Contact) string { return c.ID })},
		}, traces...)
		// A deal is the team's record of a sale: kept, without the
		// person's address (its links to the contact and lead are unset
		// with them). The exports that may hold the person go last.
		then = func(out map[string]int64) error {
			if ids := idsOf(p.Deals, func(d *Deal) string { return d.ID }); len(ids) > 0 {
				res := tx.Model(&Deal{}).Where("org_id = ? AND id IN ? AND contact_email = ?", e.OrgID, ids, e.Email).
					Updates(map[string]any{"contact_email": "", "updated_at": Now()})
				if out["deals"] += res.RowsAffected; res.Error != nil {
					return res.Error
				}
			}
			return withdrawExports(tx, e, out)
		}
	}
	out := map[string]int64{}
	for _, d := range deletes {
		if len(d.ids) == 0 {
			continue
		}
		res := tx.Where("org_id = ? AND id IN ?", e.OrgID, d.ids).Delete(d.model)
		if res.Error != nil {
			return nil, res.Error
		}
		out[d.kind] += res.RowsAffected
	}
	if then != nil {
		if err := then(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withdrawExports deletes the exports of the person's data, and ends at
// once the organization's other exports, which may hold the person: a
// finished one's file is deleted (it says so: expired; the team exports
// again), one still being written is cancelled (its next chunk finds it
// so and writes nothing) with what it had written.
func withdrawExports(tx *gorm.DB, e *Erasure, out map[string]int64) error {
	mine := tx.Model(&Export{}).Select("id").Where("org_id = ? AND object = ? AND filters LIKE ? ESCAPE '\\'",
		e.OrgID, PersonExport, LikePattern(`"`+e.Email+`"`))
	if err := tx.Where("file_id IN (?)", mine).Delete(&FilePart{}).Error; err != nil {
		return err
	}
	res := tx.Where("id IN (?)", mine).Delete(&Export{})
	if out["personExports"] = res.RowsAffected; res.Error != nil {
		return res.Error
	}
	now := Now()
	live := func() *gorm.DB {
		return tx.Model(&Export{}).Where("org_id = ? AND (state IN ? OR expires_at > ?)", e.OrgID, []string{ExportQueued, ExportRunning}, now)
	}
	if err := tx.Where("file_id IN (?)", live().Select("id")).Delete(&FilePart{}).Error; err != nil {
		return err
	}
	res = live().Where("state IN ?", []string{ExportQueued, ExportRunning}).Updates(map[string]any{"state": ExportCancelled,
		"error": "Withdrawn: a person's data was erased; export again.", "finished_at": now, "expires_at": now, "updated_at": now})
	if res.Error != nil {
		return res.Error
	}
	withdrawn := res.RowsAffected
	res = live().Update("expires_at", now)
	out["exportsWithdrawn"] = withdrawn + res.RowsAffected
	return res.Error
}

// FinishErasure ends e with what its steps erased: the address is
// forgotten (the record keeps its hash, for the block).
func FinishErasure(tx *gorm.DB, e *Erasure, erased map[string]int64) error {
	counts, _ := json.Marshal(erased)
	now := Now()
	e.State, e.Email, e.Erased, e.FinishedAt = ErasureDone, "", string(counts), &now
	return tx.Model(e).Updates(map[string]any{"state": e.State, "email": "", "erased": e.Erased, "finished_at": e.FinishedAt}).Error
}

// PurgeErasures deletes the requests never confirmed, with their address.
func PurgeErasures(db *gorm.DB, now time.Time) error {
	return db.Where("state = ? AND confirm_by < ?", ErasurePending, now).Delete(&Erasure{}).Error
}
