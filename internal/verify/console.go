package verify

// The console family (A's web console session, driven over HTTP as a
// browser drives it, on B's pages) and the audit family (A's refusals
// are in A's own audit log, and nothing of B's is).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
)

// browser is a web console session: a cookie jar, redirects not
// followed, and the CSRF token of the last page it saw.
type browser struct {
	base string
	c    *http.Client
	csrf string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (r *run) browser(rec *recorder) *browser {
	jar, _ := cookiejar.New(nil)
	var rt http.RoundTripper = r.o.Transport
	if rec != nil {
		rt = rec
	}
	return &browser{base: strings.TrimSuffix(r.o.Endpoint, "/"), c: &http.Client{Jar: jar, Transport: rt, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(ctx context.Context, method, path string, form url.Values) (int, string, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return 0, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(data), err
}

// post sends form with token as its CSRF token.
func (b *browser) post(ctx context.Context, path string, form url.Values, token string) (int, string, error) {
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	if token != "" {
		f.Set("csrf", token)
	}
	return b.do(ctx, http.MethodPost, path, f)
}

// signIn signs in with key; it returns an error if the server serves no
// console or refuses the key.
func (b *browser) signIn(ctx context.Context, key string) error {
	st, body, err := b.do(ctx, http.MethodGet, "/console/signin", nil)
	if err != nil {
		return err
	}
	if st == http.StatusNotFound {
		return fmt.Errorf("the web console is not available (GET /console/signin: 404)")
	}
	if st != http.StatusOK || b.csrf == "" {
		return fmt.Errorf("GET /console/signin: %d %s", st, clip(body))
	}
	st, body, err = b.post(ctx, "/console/signin", url.Values{"key": {key}}, b.csrf)
	if err != nil {
		return err
	}
	if st != http.StatusSeeOther {
		return fmt.Errorf("console sign-in: %d %s", st, clip(body))
	}
	_, _, err = b.do(ctx, http.MethodGet, "/console/", nil)
	return err
}

// consolePages are the pages of a tenant (under /console/tenants/{id}).
var consolePages = []string{"", "/usage", "/quota", "/audit", "/audit?outcome=denied", "/tables", "/tables/%b",
	"/tables/%b?pk=P0", "/delete", "/streams", "/streams/%b", "/subscriptions", "/backups",
	"/exports", "/aggregates", "/encryption"}

// console attacks B through A's web console session: B's pages by URL
// (which must answer exactly as a tenant that does not exist), B's forms
// posted with A's CSRF token, with B's and with none.
func (r *run) console(ctx context.Context) {
	A, B := r.A, r.B
	a, b := r.browser(A.rec), r.browser(B.rec)
	if err := a.signIn(ctx, A.admin.Key); err != nil {
		r.setupFail("the attacker's console sign-in", err)
		return
	}
	if err := b.signIn(ctx, B.admin.Key); err != nil {
		r.setupFail("the victim's console sign-in", err)
		return
	}
	// The victim's own page yields its CSRF token.
	if st, _, err := b.do(ctx, http.MethodGet, "/console/tenants/"+B.id, nil); err != nil || st != http.StatusOK {
		r.setupFail("the victim's console page", fmt.Errorf("%d %v", st, err))
		return
	}
	B.rec.take()
	bCSRF := b.csrf
	ghost := randHex(16)
	vPath, gPath := "/console/tenants/"+B.id, "/console/tenants/"+ghost
	for _, p := range append(slices.Clone(consolePages), r.victimThings...) {
		p = strings.ReplaceAll(p, "%b", url.PathEscape(r.tables[kBOnly]))
		r.try(ctx, A.rec, "GET "+vPath+p, func(ctx context.Context) string {
			st, body, err := a.do(ctx, http.MethodGet, vPath+p, nil)
			if err != nil {
				return ""
			}
			gst, gbody, err := a.do(ctx, http.MethodGet, gPath+p, nil)
			if err != nil {
				return ""
			}
			if st < 400 {
				return fmt.Sprintf("answered %d: the victim's page is shown", st)
			}
			if st != gst || strings.ReplaceAll(body, B.id, "X") != strings.ReplaceAll(gbody, ghost, "X") {
				return fmt.Sprintf("answered %d, and %d for a tenant that does not exist; the pages differ", st, gst)
			}
			return ""
		})
	}
	type form struct {
		path string
		form url.Values
	}
	var victimForms []form
	for _, th := range r.victimThings {
		if strings.HasPrefix(th, "/subscriptions/") {
			victimForms = append(victimForms, form{th + "/resume", nil}, form{th + "/pause", nil})
		}
	}
	for _, p := range append([]form{
		{"/keys", url.Values{"role": {"admin"}}},
		{"/keys/" + B.app.KeyID + "/revoke", nil},
		{"/keys/" + B.app.KeyID + "/rotate", nil},
		{"/quota", url.Values{"read_units": {"1"}}},
		{"/suspend", nil},
		{"/delete", url.Values{"confirm": {B.slug}}},
		{"/subscriptions", url.Values{"table": {r.tables[kBOnly]}, "url": {webhookURLs[1]}}},
		{"/backups", url.Values{"table": {r.tables[kBOnly]}, "name": {"tdbverify"}}},
	}, victimForms...) {
		for _, tok := range []struct{ name, token string }{{"the attacker's", a.csrf}, {"the victim's", bCSRF}, {"no", ""}} {
			r.try(ctx, A.rec, fmt.Sprintf("POST %s%s with %s CSRF token", vPath, p.path, tok.name), func(ctx context.Context) string {
				st, _, err := a.post(ctx, vPath+p.path, p.form, tok.token)
				if err != nil {
					return ""
				}
				if st < 400 {
					return fmt.Sprintf("answered %d: the victim's form was accepted", st)
				}
				return ""
			})
		}
	}
	r.try(ctx, A.rec, "a forged session cookie", func(ctx context.Context) string {
		f := r.browser(A.rec)
		u, _ := url.Parse(f.base + "/console/")
		f.c.Jar.SetCookies(u, []*http.Cookie{{Name: "tenantdb_console", Value: randHex(32), Path: "/console/"}})
		st, _, err := f.do(ctx, http.MethodGet, vPath, nil)
		if err == nil && st < 300 {
			return fmt.Sprintf("a made-up session cookie answered %d", st)
		}
		return ""
	})
	r.try(ctx, A.rec, "the victim after the console attacks", func(ctx context.Context) string {
		k, err := r.op.GetKey(ctx, B.id, B.app.KeyID)
		if err != nil || k.Status != "active" {
			return fmt.Sprintf("the victim's key after the attacks: %s %v", k.Status, err)
		}
		t, err := r.op.Tenant(ctx, B.id)
		if err != nil || t.Status != "active" {
			return fmt.Sprintf("the victim after the attacks: %s %v", t.Status, err)
		}
		return ""
	})
	a.post(ctx, "/console/signout", nil, a.csrf)
	b.post(ctx, "/console/signout", nil, b.csrf)
	B.rec.take()
}

// audit checks that A's refused attempts are in A's own audit log, read
// with A's admin key, as denials, and that the log shows nothing of B's
// (the recorder checks every answer). A refusal that is not audited is a
// finding: the operator could not see the attack.
func (r *run) audit(ctx context.Context) {
	A, B := r.A, r.B
	// NB: A's log records the paths A sent (B's tenant id, the ids A
	// named): an echo of A's own requests, not a leak; anything of B's
	// that A never sent is one.
	denied := func(ctx context.Context, after uint64) (n int64, last uint64, err error) {
		A.rec.echoes(true)
		defer A.rec.echoes(false)
		last = after
		for {
			pg, err := A.API.Audit(ctx, A.id, client.AuditQuery{After: last, Limit: 1000})
			if err != nil {
				return 0, 0, err
			}
			for _, rec := range pg.Records {
				n += rec.DeniedAttempts()
				last = max(last, rec.Seq)
			}
			if pg.NextAfter == 0 || len(pg.Records) == 0 {
				return n, last, nil
			}
			last = pg.NextAfter
		}
	}
	// Reading the log writes out the pending summaries of coalesced
	// denials; what comes after this point is ours.
	_, start, err := denied(ctx, 0)
	if err != nil {
		r.setupFail("reading the attacker's audit log", err)
		return
	}
	A.rec.take()
	attempts := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"GET /v1/tenants/{victim}/keys", func(ctx context.Context) error {
			_, err := A.API.Keys(ctx, B.id)
			return err
		}},
		{"GET /v1/tenants/{victim}/audit", func(ctx context.Context) error {
			_, err := A.API.Audit(ctx, B.id, client.AuditQuery{})
			return err
		}},
		{"POST /v1/tenants/{victim}/sessions", func(ctx context.Context) error {
			_, err := A.API.CreateSession(ctx, B.id, client.SessionRequest{Role: "admin"})
			return err
		}},
		{"PutItem under the victim's leading key", func(ctx context.Context) error {
			_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kLK), Item: item(B, kLK, 77, 0)})
			return err
		}},
		{"GetItem under the victim's leading key", func(ctx context.Context) error {
			_, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kLK), Key: keyOf(item(B, kLK, 0, 0))})
			return err
		}},
		{"a read key writes to the attacker's own table", func(ctx context.Context) error {
			_, err := A.Read.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kOwn), Item: item(A, kOwn, 78, 0)})
			return err
		}},
	}
	refusedN := 0
	for _, at := range attempts {
		r.try(ctx, A.rec, at.name, func(ctx context.Context) string {
			err := at.fn(ctx)
			if err == nil {
				return "succeeded; it must be refused"
			}
			var ae smithy.APIError
			var ce *client.Error
			if errors.As(err, &ae) || errors.As(err, &ce) {
				refusedN++ // an answer, not a network error
			}
			return ""
		})
	}
	r.try(ctx, A.rec, "the attacker's refusals in its own audit log", func(ctx context.Context) string {
		// Denials are recorded as the answers are sent; give the log a
		// moment, then read what came after start.
		var n int64
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _, err := denied(ctx, start)
			if err != nil {
				return ""
			}
			if n = got; n >= int64(refusedN) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n < int64(refusedN) {
			return fmt.Sprintf("%d of the attacker's %d refused attempts are in its audit log", n, refusedN)
		}
		return ""
	})
	// The victim's log holds none of the attacker's attempts' details
	// (B's log is B's); the recorder of B's client checks for A's secrets.
	r.try(ctx, B.rec, "the victim's audit log", func(ctx context.Context) string {
		B.API.Audit(ctx, B.id, client.AuditQuery{Limit: 1000})
		return ""
	})
}
