package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/SherClockHolmes/webpush-go"
	"gorm.io/gorm"

	"github.com/business-suite/suite/activities"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// Concurrent first starts (API replicas and workers) end up with one key
// pair, the one stored.
func TestVapidKeysGeneratedOnceAndShared(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		cfg := Config{VAPIDSubject: "mailto:admin@business-suite.local"}
		const n = 8
		got := make([]activities.VAPID, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got[i], errs[i] = loadVAPID(t.Context(), cfg, db) })
		}
		wg.Wait()
		var stored models.VAPIDKey
		if err := db.Take(&stored, "id = ?", models.DefaultVAPIDKeyID).Error; err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if got[i].PublicKey != stored.PublicKey || got[i].PrivateKey != stored.PrivateKey || got[i].Subject != cfg.VAPIDSubject {
				t.Fatalf("start %d got %+v, stored %+v", i, got[i], stored)
			}
		}
	})
}

func TestVapidKeysFromConfig(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	private, public, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	otherPrivate, _, _ := webpush.GenerateVAPIDKeys()
	cfg := Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, VAPIDSubject: "https://example.com/contact"}
	v, err := loadVAPID(t.Context(), cfg, db)
	if err != nil || v.PublicKey != public || v.PrivateKey != private {
		t.Fatalf("configured pair: %+v %v", v, err)
	}
	var n int64
	db.Model(&models.VAPIDKey{}).Count(&n)
	if n != 0 {
		t.Fatal("a configured pair must not generate one")
	}
	for name, c := range map[string]Config{
		"public only":   {VAPIDPublicKey: public, VAPIDSubject: cfg.VAPIDSubject},
		"private only":  {VAPIDPrivateKey: private, VAPIDSubject: cfg.VAPIDSubject},
		"not a pair":    {VAPIDPublicKey: public, VAPIDPrivateKey: otherPrivate, VAPIDSubject: cfg.VAPIDSubject},
		"not a key":     {VAPIDPublicKey: public, VAPIDPrivateKey: "%%%", VAPIDSubject: cfg.VAPIDSubject},
		"bad subject":   {VAPIDSubject: "admin@example.com"},
		"empty subject": {},
	} {
		if _, err := loadVAPID(t.Context(), c, db); err == nil || !strings.Contains(err.Error(), "VAPID_") {
			t.Errorf("%s: error %v, want one naming the variable", name, err)
		}
	}
}
