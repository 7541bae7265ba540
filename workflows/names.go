package workflows

import (
	"go.temporal.io/sdk/temporal"
)

// TaskQueue is the one task queue every suite worker polls.
const TaskQueue = "suite"

// Custom search attributes, set on every workflow the suite starts so that
// operators can filter in the Temporal UI (`OrgId = "…" AND Kind = "…"`).
// They must be registered on the namespace (Keyword type); the dev server
// and tests do it automatically, production does it once (deploy/README.md).
var (
	SearchAttrOrgID = temporal.NewSearchAttributeKeyKeyword("OrgId")
	SearchAttrKind  = temporal.NewSearchAttributeKeyKeyword("Kind")
)

// SearchAttributeNames lists the custom search attribute names (all Keyword).
var SearchAttributeNames = []string{SearchAttrOrgID.GetName(), SearchAttrKind.GetName()}

// SearchAttributes builds the attributes for a workflow of kind for org.
func SearchAttributes(orgID, kind string) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{SearchAttrKind.ValueSet(kind)}
	if orgID != "" {
		updates = append(updates, SearchAttrOrgID.ValueSet(orgID))
	}
	return temporal.NewSearchAttributes(updates...)
}
