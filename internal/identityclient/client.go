// Package identityclient is the typed HTTP client of the identity service's
// service-to-service endpoints. The CRM side (handlers and activities)
// reaches the identity service only through it, at IDENTITY_URL.
package identityclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Client calls the identity service.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client for the service at baseURL (e.g.
// http://127.0.0.1:8080/identity) authenticating with serviceToken.
func New(baseURL, serviceToken string, timeout time.Duration) *Client {
	return &Client{base: baseURL, token: serviceToken, http: &http.Client{Timeout: timeout}}
}

// BaseURL is the service's base URL.
func (c *Client) BaseURL() string { return c.base }

// Error is a non-2xx answer of the identity service.
type Error struct {
	Status int
	Code   string
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("identity service answered %d %s: %s", e.Status, e.Code, e.Detail)
}

// Permanent tells whether retrying cannot help: a 4xx other than 408/429.
// Network errors and 5xx are transient.
func Permanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status >= 400 && e.Status < 500 &&
		e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

// Membership is a user's role in an organization.
type Membership struct {
	OrgID   string `json:"orgId"`
	UserID  string `json:"userId"`
	OrgName string `json:"orgName,omitempty"`
	Role    string `json:"role"`
}

// RegisterOrg creates or renames the organization (idempotent).
func (c *Client) RegisterOrg(ctx context.Context, orgID, name string) error {
	return c.do(ctx, http.MethodPut, "/v1/orgs/"+url.PathEscape(orgID), map[string]string{"name": name}, nil)
}

// DeregisterOrg removes the organization and its memberships (idempotent).
func (c *Client) DeregisterOrg(ctx context.Context, orgID string) error {
	return c.do(ctx, http.MethodDelete, "/v1/orgs/"+url.PathEscape(orgID), nil, nil)
}

// SetMembers makes the organization's memberships exactly members.
func (c *Client) SetMembers(ctx context.Context, orgID string, members []Membership) error {
	type entry struct {
		UserID string `json:"userId"`
		Role   string `json:"role"`
	}
	body := struct {
		Members []entry `json:"members"`
	}{Members: make([]entry, len(members))}
	for i, m := range members {
		body.Members[i] = entry{UserID: m.UserID, Role: m.Role}
	}
	return c.do(ctx, http.MethodPut, "/v1/orgs/"+url.PathEscape(orgID)+"/members", body, nil)
}

// UserOrgs lists the organizations a user belongs to.
func (c *Client) UserOrgs(ctx context.Context, userID string) ([]Membership, error) {
	var out struct {
		Data []Membership `json:"data"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/users/"+url.PathEscape(userID)+"/orgs", nil, &out)
	return out.Data, err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("identity service %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(data, &p)
		return &Error{Status: resp.StatusCode, Code: p.Code, Detail: p.Detail}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
