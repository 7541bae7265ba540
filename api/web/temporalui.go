package web

import (
	"cmp"
	"net/url"
	"strings"
)

// TemporalUI links workflows to their pages in the Temporal Web UI. The
// zero value (no UI configured) links nothing.
type TemporalUI struct {
	// workflows is the namespace's workflow list, "" without a UI.
	workflows string
}

// NewTemporalUI links into the UI at base ("" for none), in namespace
// ("" for default).
func NewTemporalUI(base, namespace string) TemporalUI {
	if base == "" {
		return TemporalUI{}
	}
	return TemporalUI{workflows: strings.TrimRight(base, "/") + "/namespaces/" + url.PathEscape(cmp.Or(namespace, "default")) + "/workflows"}
}

// Workflow is the page of workflow id (its latest run), or "".
func (u TemporalUI) Workflow(id string) string {
	if u.workflows == "" {
		return ""
	}
	return u.workflows + "/" + url.PathEscape(id)
}

// Search is the list of the workflows a visibility query finds, or "".
func (u TemporalUI) Search(query string) string {
	if u.workflows == "" {
		return ""
	}
	return u.workflows + "?query=" + url.QueryEscape(query)
}
