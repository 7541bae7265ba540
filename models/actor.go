package models

import "strings"

// Actor is who made a change, in one encoding in every table and every
// interface's records: "member:<member id>" for a workspace member,
// "key:<API key id>" for an API key, "automation:<rule id>" for a step of
// an automation rule (AutomationCause.Actor), or the bare name of a part of the
// suite that acts on its own (ActorIntake, ActorSystem, ActorEmail). Build one with
// MemberActor or KeyActor (or auth.Principal.Actor in a handler); compare
// actors, never their strings' parts.
type Actor string

const (
	// ActorIntake is the lead intake workflow.
	ActorIntake Actor = "intake"
	// ActorSystem is the suite's timers (e.g. a ticket's auto-close).
	ActorSystem Actor = "system"
	// ActorEmail is the e-mail channel (a ticket or comment that came by
	// e-mail).
	ActorEmail Actor = "email"

	memberPrefix     = "member:"
	keyPrefix        = "key:"
	automationPrefix = "automation:"
)

// MemberActor is the workspace member memberID.
func MemberActor(memberID string) Actor { return Actor(memberPrefix + memberID) }

// KeyActor is the API key keyID.
func KeyActor(keyID string) Actor { return Actor(keyPrefix + keyID) }

// MemberID is the member an actor names, if it names one.
func (a Actor) MemberID() (string, bool) {
	id, ok := strings.CutPrefix(string(a), memberPrefix)
	if !ok || id == "" {
		return "", false
	}
	return id, true
}

// Valid reports whether a is in the encoding: a member, a key, or a known
// part of the suite.
func (a Actor) Valid() bool {
	switch {
	case a == ActorIntake, a == ActorSystem, a == ActorEmail:
		return true
	case strings.HasPrefix(string(a), memberPrefix):
		return len(a) > len(memberPrefix)
	case strings.HasPrefix(string(a), keyPrefix):
		return len(a) > len(keyPrefix)
	case strings.HasPrefix(string(a), automationPrefix):
		return len(a) > len(automationPrefix)
	}
	return false
}
