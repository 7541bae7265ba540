package activities

import (
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
)

// AIJobs are the activities of the AIJob workflow: Begin loads the input
// and answers from the cache when it can; Map makes one model call per
// chunk; Reduce combines the parts; Complete stores the result, the cache
// entry and the organization's token usage. Every write is guarded by the
// job's status, so a retried activity never records twice, and a job
// canceled meanwhile keeps its status.
type AIJobs struct {
	DB       *gorm.DB
	Provider ai.Provider
	// Now is the clock (nil: models.Now).
	Now func() time.Time
}

// Job statuses the AIJob workflow reports (the models' values, named here
// so that workflow code needs no data-layer import).
const (
	AIJobSucceeded = models.AIJobSucceeded
	AIJobFailed    = models.AIJobFailed
	AIJobCanceled  = models.AIJobCanceled
)

// AIJobNonRetryableErrorTypes lists every error type the AIJob workflow
// must not retry.
var AIJobNonRetryableErrorTypes = append([]string{ErrTypeAIJobFinished, ErrTypeAIJobMissing, ErrTypeAIInvalidData}, ai.NonRetryableErrorTypes...)

// AIJobPlan is what Begin decided.
type AIJobPlan struct {
	Kind string `json:"kind"`
	// Done: nothing left to run. Status says why: succeeded (from the
	// cache), failed (ErrorCode/ErrorMessage), or canceled.
	Done         bool   `json:"done"`
	Status       string `json:"status"`
	Cached       bool   `json:"cached"`
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Chunks is how many model calls the map step makes.
	Chunks int `json:"chunks"`
	// CallTimeout bounds one model call; activity timeouts derive from it.
	CallTimeout time.Duration `json:"callTimeout"`
}

// AIPartial is the output of one map call.
type AIPartial struct {
	Summary   string                `json:"summary,omitempty"`
	Items     []models.AIActionItem `json:"items,omitempty"`
	Narrative string                `json:"narrative,omitempty"`
	Usage     ai.Usage              `json:"usage"`
	ModelMS   int64                 `json:"modelMs"`
}

// AIOutcome is a job's result, ready to store.
type AIOutcome struct {
	Output  json.RawMessage `json:"output"`
	Usage   ai.Usage        `json:"usage"`
	ModelMS int64           `json:"modelMs"`
}

func (a *AIJobs) now() time.Time {
	if a.Now != nil {
		return a.Now().UTC().Truncate(time.Microsecond)
	}
	return models.Now()
}

func (a *AIJobs) job(tx *gorm.DB, id string, lock bool) (*models.AIJob, error) {
	var j models.AIJob
	q := tx
	if lock {
		q = models.LockForUpdate(tx)
	}
	if err := q.Take(&j, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, temporal.NewNonRetryableApplicationError("AI job "+id+" does not exist", ErrTypeAIJobMissing, err)
		}
		return nil, err
	}
	return &j, nil
}
