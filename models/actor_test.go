package models_test

import (
	"testing"

	"github.com/business-suite/suite/models"
)

func TestActorEncoding(t *testing.T) {
	for _, c := range []struct {
		actor  models.Actor
		valid  bool
		member string
	}{
		{models.MemberActor("m1"), true, "m1"},
		{models.KeyActor("k1"), true, ""},
		{models.ActorIntake, true, ""},
		{models.ActorSystem, true, ""},
		{"m1", false, ""}, // the CRM's old bare member id
		{"member:", false, ""},
		{"key:", false, ""},
		{"", false, ""},
	} {
		if c.actor.Valid() != c.valid {
			t.Errorf("%q: valid %v, want %v", c.actor, c.actor.Valid(), c.valid)
		}
		id, ok := c.actor.MemberID()
		if id != c.member || ok != (c.member != "") {
			t.Errorf("%q: member %q %v, want %q", c.actor, id, ok, c.member)
		}
	}
}
