package apitest

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Browser visits the staff console (/ops/) as a browser does: it keeps
// the cookies the console sets and sends forms URL-encoded. The console
// is HTML, not part of the API document: its answers are not checked
// against it.
type Browser struct {
	e       *Env
	Cookies map[string]string
	// Token is the CSRF token of the last page that had a form.
	Token string
}

// Browser is a browser with no cookies yet.
func (e *Env) Browser() *Browser { return &Browser{e: e, Cookies: map[string]string{}} }

var formToken = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// FormToken is the CSRF token of the first form on page, or "".
func FormToken(page []byte) string {
	if m := formToken.FindSubmatch(page); m != nil {
		return string(m[1])
	}
	return ""
}

// Get loads a page.
func (b *Browser) Get(path string) *Response {
	b.e.T.Helper()
	return b.do(Request{Method: http.MethodGet, Path: path})
}

// Post sends a form; headers are added (Origin, …).
func (b *Browser) Post(path string, form url.Values, headers map[string]string) *Response {
	b.e.T.Helper()
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range headers {
		h[k] = v
	}
	return b.do(Request{Method: http.MethodPost, Path: path, Body: form.Encode(), Headers: h})
}

// Form sends a form with the last page's token, as the page's own form
// would.
func (b *Browser) Form(path string, form url.Values) *Response {
	b.e.T.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.Token)
	return b.Post(path, form, nil)
}

// SignIn signs u in through the sign-in page and returns the answer to the
// form (a 303 to the console on success).
func (b *Browser) SignIn(u *User) *Response {
	b.e.T.Helper()
	b.Get("/ops/sign-in").Expect(http.StatusOK)
	return b.Form("/ops/sign-in", url.Values{"email": {u.Email}, "password": {u.Password}})
}

func (b *Browser) do(req Request) *Response {
	b.e.T.Helper()
	if req.Headers == nil {
		req.Headers = map[string]string{}
	}
	var jar []string
	for k, v := range b.Cookies {
		jar = append(jar, k+"="+v)
	}
	if len(jar) > 0 {
		req.Headers["Cookie"] = strings.Join(jar, "; ")
	}
	req.SkipSpec = true
	resp := b.e.Do(req)
	for _, line := range resp.Header.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			b.e.T.Fatalf("Set-Cookie %q: %v", line, err)
		}
		if c.MaxAge < 0 || (!c.Expires.IsZero() && c.Expires.Before(time.Now())) {
			delete(b.Cookies, c.Name)
		} else {
			b.Cookies[c.Name] = c.Value
		}
	}
	if token := FormToken(resp.Body); token != "" {
		b.Token = token
	}
	return resp
}

// Namespace is the Temporal namespace the Env's workflows run in.
func (e *Env) Namespace() string { return e.namespace }
