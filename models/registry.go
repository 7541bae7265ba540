package models

// All lists every entity with a table, in migration order. The schema test
// checks each against the migrated database on both dialects.
func All() []any {
	return []any{
		&WorkflowStart{},
		&IdempotencyKey{},
		&IdentityUser{},
		&IdentityRefreshToken{},
		&IdentitySigningKey{},
		&IdentityOrg{},
		&IdentityMembership{},
		&Plan{},
		&Organization{},
		&Member{},
		&APIKey{},
		&Contact{},
		&Lead{},
		&LeadActivity{},
		&LeadIntake{},
		&Deal{},
		&DealStageChange{},
		&Task{},
		&Notification{},
		&AssignmentCursor{},
		&Customer{},
		&TicketCounter{},
		&Ticket{},
		&TicketComment{},
		&CustomerEvent{},
		&TimeEntry{},
		&KBCategory{},
		&KBArticle{},
		&PushSubscription{},
		&VAPIDKey{},
		&IdentityRevokedSession{},
		&ServerSecret{},
		&Invitation{},
	}
}
