package activities

// Temporal application error types of the suite's activities, in one
// place: activities produce them (temporal.NewApplicationError and
// NewNonRetryableApplicationError), workflows name them in retry policies
// and check them with errors.As and ApplicationError.Type. Never write the
// string itself: a typo there is a retry policy that silently retries. The
// AI providers' types are in activities/ai (ErrTypeRejected, …), the
// workflows' own in workflows (ErrTypeChangeFailed, …).
const (
	// ErrTypeNotFound: a row the activity works on does not exist (deleted
	// meanwhile); retrying cannot bring it back.
	ErrTypeNotFound = "NotFound"
	// ErrTypeBadPayload: a stored lead-intake payload is not the JSON it
	// should be.
	ErrTypeBadPayload = "BadPayload"

	// ErrTypeIdentityRejected marks a permanent refusal by the identity
	// service.
	ErrTypeIdentityRejected = "IdentityRejected"

	// ErrTypePushTransient: a push service answered 5xx or 429, or could
	// not be reached; the activity is retried.
	ErrTypePushTransient = "PushTransient"
	// ErrTypePushNotConfigured: the worker has no VAPID key.
	ErrTypePushNotConfigured = "PushNotConfigured"

	// ErrTypeSMTPRejected: the server refused the message for good (5xx);
	// retrying cannot help.
	ErrTypeSMTPRejected = "SMTPRejected"
	// ErrTypeSMTPConfig: SMTP_URL or SMTP_FROM is unusable.
	ErrTypeSMTPConfig = "SMTPConfig"
	// ErrTypeSMTPTemporary: a 4xx answer, or the server could not be
	// reached or the connection failed; the activity is retried.
	ErrTypeSMTPTemporary = "SMTPTemporary"

	// ErrTypeWebhookSecret: a webhook endpoint's stored secret cannot
	// sign (it was written around the API); retrying cannot help.
	ErrTypeWebhookSecret = "WebhookSecret"
	// ErrTypeInvitationKeyChanged: the invitation's token can no longer be
	// derived (the invitation key was rotated); only a resend helps.
	ErrTypeInvitationKeyChanged = "InvitationKeyChanged"

	// ErrTypeAIJobFinished: the job was canceled (or otherwise finished)
	// while the workflow ran; the workflow stops without touching it.
	ErrTypeAIJobFinished = "AIJobFinished"
	// ErrTypeAIJobMissing: no such job (its organization was deleted).
	ErrTypeAIJobMissing = "AIJobMissing"
	// ErrTypeAIInvalidData: an analysis found no table it can read.
	ErrTypeAIInvalidData = "AIInvalidData"

	// ErrTypeStripeRejected: Stripe answered 4xx (a card declined, a bad
	// request, a missing object). Retrying the same request cannot help;
	// the details are a StripeFailure.
	ErrTypeStripeRejected = "StripeRejected"
	// ErrTypeBillingNotConfigured: no STRIPE_SECRET_KEY.
	ErrTypeBillingNotConfigured = "BillingNotConfigured"
	// ErrTypePriceNotConfigured: no Stripe price for a plan and interval.
	ErrTypePriceNotConfigured = "PriceNotConfigured"
	// ErrTypeChangeClosed: the change is no longer open (e.g. it was
	// canceled meanwhile); the step must not act on it.
	ErrTypeChangeClosed = "ChangeClosed"

	// ErrTypeStepRefused: an automation rule's step asked for a change the
	// object's rules refuse (a status move the ticket's workflow does not
	// allow); retrying cannot help, and the run fails with the reason.
	ErrTypeStepRefused = "StepRefused"
)
