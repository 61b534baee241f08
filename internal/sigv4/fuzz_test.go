package sigv4

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// FuzzParse feeds Authorization headers to Parse, and what it accepts to
// Verify. Neither may panic, every error must be an *apierr.Error, and an
// accepted header must satisfy Auth's documented shape. The corpus lives in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		testAuth,
		suiteCred + "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		"AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request,SignedHeaders=host;x-amz-date,Signature=00",
		"AWS4-HMAC-SHA256",
		"AWS4-HMAC-SHA256 Credential=, SignedHeaders=, Signature=",
		"AWS4-HMAC-SHA256 Credential= A/20260101/r/s/aws4_request",
		"AWS4-HMAC-SHA256 Credential=A/B/C/D/E/F, SignedHeaders=host;;x, Signature=zz",
		"Bearer eyJhbGciOiJIUzI1NiJ9.e30.x",
		"AWS4-HMAC-SHA256 Signature=00, Signature=00",
		"=,=,=",
		"AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, SignedHeaders=" + strings.Repeat("h;", 20) + "host, Signature=00",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	key := SigningKey("secret", "20260101", "us-east-1", "dynamodb")
	f.Fuzz(func(t *testing.T, h string) {
		r := &Request{
			Method: "POST", Path: "/", Host: "localhost",
			Header: map[string][]string{
				"Authorization": {h},
				"X-Amz-Date":    {"20260101T000000Z"},
				"X-Amz-Target":  {"DynamoDB_20120810.ListTables"},
			},
			Body: []byte("{}"),
		}
		a, err := Parse(r)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse error %T %v is not an *apierr.Error", err, err)
			}
			if k := e.Kind; k != apierr.MissingAuthenticationToken && k != apierr.IncompleteSignature {
				t.Fatalf("Parse error kind %v", k)
			}
			return
		}
		if a.AccessKeyID == "" || len(a.Date) != 8 || a.Region == "" || a.Service == "" ||
			len(a.SignedHeaders) == 0 || a.Signature == "" || a.TimeHeader != "x-amz-date" {
			t.Fatalf("Parse(%q) accepted an incomplete Auth %+v", h, a)
		}
		for _, s := range a.SignedHeaders {
			if s == "" || s != strings.ToLower(s) || strings.ContainsAny(s, ";, \t") {
				t.Fatalf("Parse(%q): bad signed header name %q", h, s)
			}
		}
		err = Verify(r, a, key, now)
		var e *apierr.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("Verify error %T %v is not an *apierr.Error", err, err)
		}
	})
}
