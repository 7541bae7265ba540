package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
)

// demoCredentials are what `suite dev` prints so that a new user can try the
// API at once. They live in SUITE_DATA_DIR/demo.json (mode 0600) because
// keys are stored hashed and could not be shown again otherwise.
type demoCredentials struct {
	Email    string            `json:"email"`
	Password string            `json:"password"`
	OrgID    string            `json:"orgId"`
	Keys     map[string]string `json:"keys"`
}

// seedDemo creates, on first start, a demo owner, a demo organization on
// the business plan and one key per service — through the public API, the
// same path a user takes, so the demo exercises the real thing.
func seedDemo(ctx context.Context, cfg Config, db *gorm.DB, base string) (*demoCredentials, error) {
	path := filepath.Join(cfg.DataDir, "demo.json")
	if b, err := os.ReadFile(path); err == nil {
		var d demoCredentials
		if json.Unmarshal(b, &d) == nil {
			if _, err := models.FindOrg(ctx, db, d.OrgID); err == nil {
				return &d, nil
			}
		}
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	d := &demoCredentials{
		Email:    "demo-" + hex.EncodeToString(suffix) + "@example.com",
		Password: hex.EncodeToString(pw),
		Keys:     map[string]string{},
	}
	api := &demoClient{base: base, http: &http.Client{Timeout: 10 * time.Second}}
	if err := api.call(ctx, "POST", "/identity/v1/users", "", map[string]string{"email": d.Email, "password": d.Password, "name": "Demo Owner"}, nil); err != nil {
		return nil, err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := api.call(ctx, "POST", "/identity/v1/token", "", map[string]string{"grant_type": "password", "email": d.Email, "password": d.Password}, &tok); err != nil {
		return nil, err
	}
	var org struct {
		ID string `json:"id"`
	}
	if err := api.call(ctx, "POST", "/crm/organization", tok.AccessToken, map[string]string{"name": "Demo Company"}, &org); err != nil {
		return nil, err
	}
	d.OrgID = org.ID
	if err := models.SetOrgPlan(ctx, db, org.ID, models.PlanBusiness); err != nil {
		return nil, err
	}
	for _, service := range []string{"crm", "helpdesk", "ai"} {
		var key struct {
			Key string `json:"key"`
		}
		body := map[string]string{"name": "demo " + service + " key", "service": service}
		if err := api.call(ctx, "POST", "/crm/organization/"+org.ID+"/apikeys", tok.AccessToken, body, &key); err != nil {
			return nil, err
		}
		d.Keys[service] = key.Key
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	return d, nil
}

type demoClient struct {
	base string
	http *http.Client
}

func (d *demoClient) call(ctx context.Context, method, path, token string, in, out any) error {
	b, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return errors.New(method + " " + path + ": " + resp.Status + ": " + string(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func printDemo(d *demoCredentials, base string) {
	fmt.Fprintf(stdout, "Demo organization %s (business plan)\n", d.OrgID)
	fmt.Fprintf(stdout, "  owner       %s / %s\n", d.Email, d.Password)
	fmt.Fprintf(stdout, "  CRM key     %s\n  Helpdesk key %s\n  AI key      %s\n\n", d.Keys["crm"], d.Keys["helpdesk"], d.Keys["ai"])
	fmt.Fprintf(stdout, "Try it:\n")
	fmt.Fprintf(stdout, "  curl -s %s/identity/v1/token -H 'Content-Type: application/json' \\\n    -d '{\"grant_type\":\"password\",\"email\":\"%s\",\"password\":\"%s\"}'\n", base, d.Email, d.Password)
	fmt.Fprintf(stdout, "  curl -s %s/crm/leads/webhook -H 'Content-Type: application/json' \\\n    -d '{\"orgId\":\"%s\",\"name\":\"Grace\",\"email\":\"grace@example.org\",\"company\":\"Navy\",\"value\":25000,\"source\":\"referral\"}'\n", base, d.OrgID)
	fmt.Fprintf(stdout, "  curl -s %s/crm/leads -H 'Authorization: Bearer %s'\n\n", base, d.Keys["crm"])
}
