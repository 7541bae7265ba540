// Package worker wires workflows and activities onto a Temporal worker. The
// same Register is used by `suite worker`, `suite dev` and the tests, so what
// runs in production is exactly what the tests exercise.
package worker

import (
	"time"

	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/internal/identityclient"
	"github.com/business-suite/suite/internal/netguard"
	"github.com/business-suite/suite/internal/stripeconfig"
	"github.com/business-suite/suite/workflows/names"

	"github.com/business-suite/suite/workflows"
)

// Deps are the dependencies activities need.
type Deps struct {
	DB       *gorm.DB
	Identity *identityclient.Client
	// VAPID signs web pushes (NotificationDelivery).
	VAPID activities.VAPID
	// AI is the provider AI jobs call (nil: the built-in local provider).
	AI ai.Provider
	// Billing is the Stripe configuration (SubscriptionChange); without a
	// secret key its activities fail with BillingNotConfigured.
	Billing stripeconfig.Config
	// PushEgress decides which push services may be reached (public https
	// only unless tests allow more).
	PushEgress netguard.Policy
	// Mail sends invitation e-mails (zero: none are sent).
	Mail activities.SMTP
	// PublicURL is the API's public base URL and InviteURL the optional
	// accept-link template ({token}), both for invitation e-mails.
	PublicURL, InviteURL string
	// MailDomain is the domain of the workspaces' e-mail addresses
	// (SUITE_MAIL_DOMAIN), which a ticket's replies come from.
	MailDomain string
	// WebhookEgress decides which webhook endpoints may be reached: public
	// addresses, and the hosts of SUITE_WEBHOOK_ALLOW_HOSTS.
	WebhookEgress netguard.Policy
	// TicketAutoCloseAfter is how long a ticket an automation rule solved
	// stays solved (0: models.DefaultTicketAutoClose).
	TicketAutoCloseAfter time.Duration
	// Metrics is where the activities' own metrics are registered (nil:
	// nowhere), beside the SDK's.
	Metrics prometheus.Registerer
}

// Register registers every workflow and activity of the suite on r.
func Register(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.OrgRegistration, workflow.RegisterOptions{Name: names.OrgRegistrationWorkflow})
	r.RegisterWorkflowWithOptions(workflows.OrgSync, workflow.RegisterOptions{Name: names.OrgSyncWorkflow})
	r.RegisterActivity(&activities.Orgs{DB: deps.DB, Identity: deps.Identity})
	r.RegisterWorkflowWithOptions(workflows.LeadIntake, workflow.RegisterOptions{Name: names.LeadIntakeWorkflow})
	r.RegisterActivity(&activities.Leads{DB: deps.DB})
	r.RegisterWorkflowWithOptions(workflows.NotificationDelivery, workflow.RegisterOptions{Name: names.NotificationDeliveryWorkflow})
	r.RegisterActivity(&activities.Push{DB: deps.DB, VAPID: deps.VAPID, Egress: deps.PushEgress})
	r.RegisterWorkflowWithOptions(workflows.InvitationEmail, workflow.RegisterOptions{Name: names.InvitationEmailWorkflow})
	r.RegisterActivity(&activities.Invitations{DB: deps.DB, Mail: deps.Mail, PublicURL: deps.PublicURL, InviteURL: deps.InviteURL})
	r.RegisterWorkflowWithOptions(workflows.TicketAutoClose, workflow.RegisterOptions{Name: names.TicketAutoCloseWorkflow})
	r.RegisterWorkflowWithOptions(workflows.TicketAutoCloseCancel, workflow.RegisterOptions{Name: names.TicketAutoCloseCancelWorkflow})
	r.RegisterActivity(&activities.Tickets{DB: deps.DB})
	r.RegisterWorkflowWithOptions(workflows.TicketSLA, workflow.RegisterOptions{Name: names.TicketSLAWorkflow})
	r.RegisterActivity(&activities.SLA{DB: deps.DB})
	provider := deps.AI
	if provider == nil {
		provider = ai.NewLocal()
	}
	r.RegisterWorkflowWithOptions(workflows.AIJob, workflow.RegisterOptions{Name: names.AIJobWorkflow})
	r.RegisterActivity(&activities.AIJobs{DB: deps.DB, Provider: provider})
	r.RegisterWorkflowWithOptions(workflows.SubscriptionChange, workflow.RegisterOptions{Name: names.SubscriptionChangeWorkflow})
	r.RegisterActivity(activities.NewBilling(deps.DB, deps.Billing))
	r.RegisterWorkflowWithOptions(workflows.EmailIngest, workflow.RegisterOptions{Name: names.EmailIngestWorkflow})
	r.RegisterWorkflowWithOptions(workflows.EmailSend, workflow.RegisterOptions{Name: names.EmailSendWorkflow})
	r.RegisterWorkflowWithOptions(workflows.EmailAddressVerify, workflow.RegisterOptions{Name: names.EmailVerifyWorkflow})
	r.RegisterActivity(&activities.Email{DB: deps.DB, Mail: deps.Mail, Domain: deps.MailDomain})
	r.RegisterWorkflowWithOptions(workflows.AutomationRun, workflow.RegisterOptions{Name: names.AutomationRunWorkflow})
	r.RegisterActivity(&activities.Automations{DB: deps.DB, MailDomain: deps.MailDomain, MailOutbound: deps.Mail.Configured(),
		AutoCloseAfter: deps.TicketAutoCloseAfter})
	r.RegisterWorkflowWithOptions(workflows.PersonMerge, workflow.RegisterOptions{Name: names.PersonMergeWorkflow})
	r.RegisterActivity(&activities.Merges{DB: deps.DB})
	r.RegisterWorkflowWithOptions(workflows.FieldChange, workflow.RegisterOptions{Name: names.FieldChangeWorkflow})
	r.RegisterActivity(&activities.Fields{DB: deps.DB})
	r.RegisterWorkflowWithOptions(workflows.Import, workflow.RegisterOptions{Name: names.ImportWorkflow})
	r.RegisterWorkflowWithOptions(workflows.Export, workflow.RegisterOptions{Name: names.ExportWorkflow})
	r.RegisterActivity(&activities.Transfers{DB: deps.DB})
	r.RegisterWorkflowWithOptions(workflows.Erasure, workflow.RegisterOptions{Name: names.ErasureWorkflow})
	r.RegisterActivity(&activities.Erasures{DB: deps.DB})
	r.RegisterWorkflowWithOptions(workflows.WebhookEndpoint, workflow.RegisterOptions{Name: names.WebhookEndpointWorkflow})
	r.RegisterActivity(&activities.Webhooks{DB: deps.DB, Egress: deps.WebhookEgress, Metrics: activities.NewWebhookMetrics(deps.DB, deps.Metrics)})
}

// StickyCacheSize is how many workflows a worker process keeps in memory
// between their tasks (the SDK's default is 10,000). A workflow not in it
// is replayed from its history when its next task comes — a few events
// for most of the suite's workflows. 10,000 open SLA workflows held suite
// dev at 1.6 GB with the default.
const StickyCacheSize = 2048

// New creates a worker on the suite task queue with everything registered.
// The first worker of the process sizes the process's workflow cache
// (StickyCacheSize).
func New(c client.Client, deps Deps, opts sdkworker.Options) sdkworker.Worker {
	sdkworker.SetStickyWorkflowCacheSize(StickyCacheSize)
	w := sdkworker.New(c, names.TaskQueue, opts)
	Register(w, deps)
	return w
}

// EnsureSearchAttributes registers the suite's custom search attributes on
// namespace when missing. It needs operator rights, so production may
// instead register them once by hand (deploy/README.md); the error says so.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	op := c.OperatorService()
	have, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range names.SearchAttributeNames {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	if err != nil {
		return fmt.Errorf("register search attributes %v on %s (register them once with `temporal operator search-attribute create`): %w", names.SearchAttributeNames, namespace, err)
	}
	return nil
}
