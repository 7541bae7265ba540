package record

import (
	"errors"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// Notify stores n for its member (models.Notify) and, when the member has
// a browser subscribed to web push, records in the same transaction the
// start of its NotificationDelivery workflow: a notification is never
// pushed without being stored, nor stored without its push. It is the one
// way the API and the activities notify a member; build n with one of the
// models.*Notice constructors. n.ID is set when empty; give it an id
// derived from the event (models.DerivedID) to make the call idempotent —
// a notification already stored is left as it is, and so is its push. It
// reports whether n was new.
func (tx *Tx) Notify(n *models.Notification) (bool, error) {
	if n.ID == "" {
		n.ID = models.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = models.Now()
	}
	created, err := models.Notify(tx.DB, n)
	if err != nil || !created {
		return created, err
	}
	subscribed, err := models.PushSubscribed(tx.DB, n.OrgID, n.MemberID)
	if err != nil || !subscribed {
		return created, err
	}
	err = tx.Start(Start{WorkflowID: names.NotificationDeliveryID(n.ID), Workflow: names.NotificationDeliveryWorkflow,
		Input: models.NotificationDeliveryInput{NotificationID: n.ID, OrgID: n.OrgID}, OrgID: n.OrgID, Kind: names.KindNotificationDelivery})
	if errors.Is(err, ErrDuplicate) {
		err = nil
	}
	return created, err
}
