package sigv4

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

const testAuth = "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/dynamodb/aws4_request, " +
	"SignedHeaders=content-type;host;x-amz-date;x-amz-target, " +
	"Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func hdr(kv ...string) map[string][]string {
	h := map[string][]string{}
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return h
}

// wantErr fails unless err is an *apierr.Error of kind k whose message
// contains sub.
func wantErr(t *testing.T, err error, k apierr.Kind, sub string) {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *apierr.Error %v containing %q", err, err, k, sub)
	}
	if e.Kind != k || !strings.Contains(e.Message, sub) {
		t.Fatalf("err = %v %q, want %v containing %q", e.Kind, e.Message, k, sub)
	}
}

func TestParseOK(t *testing.T) {
	tests := []struct {
		name   string
		header map[string][]string
		want   Auth
	}{{
		name:   "sdk form",
		header: hdr("Authorization", testAuth, "X-Amz-Date", "20260101T000000Z"),
		want: Auth{
			AccessKeyID: "AKID", Date: "20260101", Region: "us-east-1", Service: "dynamodb",
			SignedHeaders: []string{"content-type", "host", "x-amz-date", "x-amz-target"},
			Signature:     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Time:          time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			TimeHeader:    "x-amz-date",
		},
	}, {
		name: "commas without spaces, unknown parameter, session token",
		header: hdr("Authorization", "AWS4-HMAC-SHA256 Credential=sk_live_0123_x/20261231/eu-west-1/dynamodb/aws4_request,Foo=bar,SignedHeaders=host;x-amz-date;x-amz-security-token,Signature=ab",
			"X-Amz-Date", "20261231T235959Z", "X-Amz-Security-Token", "tok"),
		want: Auth{
			AccessKeyID: "sk_live_0123_x", Date: "20261231", Region: "eu-west-1", Service: "dynamodb",
			SignedHeaders: []string{"host", "x-amz-date", "x-amz-security-token"},
			Signature:     "ab",
			Time:          time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC),
			TimeHeader:    "x-amz-date",
			SecurityToken: "tok",
		},
	}, {
		name: "date header (botocore with Date), many signed headers",
		header: hdr("Authorization", "AWS4-HMAC-SHA256  Credential=A/20260101/r/s/aws4_request,\tSignedHeaders=a;b;c;d;date;e;f;g;h;host, Signature=00",
			"Date", "Thu, 01 Jan 2026 10:20:30 -0000"),
		want: Auth{
			AccessKeyID: "A", Date: "20260101", Region: "r", Service: "s",
			SignedHeaders: []string{"a", "b", "c", "d", "date", "e", "f", "g", "h", "host"},
			Signature:     "00",
			Time:          time.Date(2026, 1, 1, 10, 20, 30, 0, time.UTC),
			TimeHeader:    "date",
		},
	}, {
		name: "X-Amz-Date wins over Date",
		header: hdr("Authorization", testAuth, "X-Amz-Date", "20260101T000000Z",
			"Date", "Mon, 02 Jan 2006 15:04:05 GMT"),
		want: Auth{
			AccessKeyID: "AKID", Date: "20260101", Region: "us-east-1", Service: "dynamodb",
			SignedHeaders: []string{"content-type", "host", "x-amz-date", "x-amz-target"},
			Signature:     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Time:          time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			TimeHeader:    "x-amz-date",
		},
	}, {
		name:   "http date in GMT",
		header: hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20060102/r/s/aws4_request, SignedHeaders=date;host, Signature=00", "Date", "Mon, 02 Jan 2006 15:04:05 GMT"),
		want: Auth{
			AccessKeyID: "A", Date: "20060102", Region: "r", Service: "s",
			SignedHeaders: []string{"date", "host"}, Signature: "00",
			Time: time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC), TimeHeader: "date",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(&Request{Header: tt.header})
			if err != nil {
				t.Fatal(err)
			}
			if got.AccessKeyID != tt.want.AccessKeyID || got.Date != tt.want.Date ||
				got.Region != tt.want.Region || got.Service != tt.want.Service ||
				!slices.Equal(got.SignedHeaders, tt.want.SignedHeaders) ||
				got.Signature != tt.want.Signature || !got.Time.Equal(tt.want.Time) ||
				got.TimeHeader != tt.want.TimeHeader || got.SecurityToken != tt.want.SecurityToken {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
			if got.Time.Location() != time.UTC {
				t.Errorf("Time location = %v, want UTC", got.Time.Location())
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const date = "20260101T000000Z"
	tests := []struct {
		name   string
		header map[string][]string
		kind   apierr.Kind
		msg    string
	}{
		{"no header", hdr("X-Amz-Date", date), apierr.MissingAuthenticationToken, "Request is missing Authentication Token"},
		{"empty header", hdr("Authorization", "", "X-Amz-Date", date), apierr.MissingAuthenticationToken, "Request is missing Authentication Token"},
		{"two headers", hdr("Authorization", testAuth, "Authorization", testAuth, "X-Amz-Date", date), apierr.IncompleteSignature, "exactly one Authorization"},
		{"bearer token", hdr("Authorization", "eyJhbGciOiJIUzI1NiJ9.e30.x", "X-Amz-Date", date), apierr.IncompleteSignature,
			"Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=eyJhbGciOiJIUzI1NiJ9.e30.x"},
		{"everything missing", hdr("Authorization", "AWS4-HMAC-SHA256"), apierr.IncompleteSignature,
			"Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=AWS4-HMAC-SHA256"},
		{"missing signature", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, SignedHeaders=host", "X-Amz-Date", date),
			apierr.IncompleteSignature, "Authorization header requires 'Signature' parameter. Authorization="},
		{"missing signed headers", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "Authorization header requires 'SignedHeaders' parameter. Authorization="},
		{"missing date", hdr("Authorization", testAuth), apierr.IncompleteSignature,
			"Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=AWS4-HMAC-SHA256 Credential=AKID"},
		{"space after equals", hdr("Authorization", "AWS4-HMAC-SHA256 Credential= AKID/20260101/r/s/aws4_request, SignedHeaders=host, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "'AKID/20260101/r/s/aws4_request' not a valid key=value pair (missing equal-sign) in Authorization header: 'AWS4-HMAC-SHA256 Credential= AKID"},
		{"duplicate", hdr("Authorization", testAuth+", Signature=00", "X-Amz-Date", date), apierr.IncompleteSignature, "duplicate 'Signature'"},
		{"wrong algorithm", hdr("Authorization", strings.Replace(testAuth, "SHA256", "SHA512", 1), "X-Amz-Date", date),
			apierr.IncompleteSignature, "Unsupported AWS 'algorithm': 'AWS4-HMAC-SHA512'"},
		{"no algorithm", hdr("Authorization", strings.TrimPrefix(testAuth, "AWS4-HMAC-SHA256 "), "X-Amz-Date", date),
			apierr.IncompleteSignature, "Unsupported AWS 'algorithm': ''"},
		{"short credential", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/dynamodb, SignedHeaders=host, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got 'AKID/20260101/us-east-1/dynamodb'"},
		{"long credential", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/B/20260101/r/s/aws4_request, SignedHeaders=host, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "exactly 5 slash-delimited elements"},
		{"empty key id", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=/20260101/r/s/aws4_request, SignedHeaders=host, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "exactly 5 slash-delimited elements"},
		{"bad terminator", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws5_request, SignedHeaders=host, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "Credential should be scoped with a valid terminator: 'aws4_request', not 'aws5_request'."},
		{"bad scope date", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/2026-01-01/r/s/aws4_request, SignedHeaders=host, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "date in the form YYYYMMDD, not '2026-01-01'"},
		{"empty signed headers", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, SignedHeaders=, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "'SignedHeaders' parameter to list at least 'host'"},
		{"upper-case signed header", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, SignedHeaders=Host;x-amz-date, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "lower-case header names, got 'Host;x-amz-date'"},
		{"empty signed header name", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, SignedHeaders=host;;x-amz-date, Signature=00", "X-Amz-Date", date),
			apierr.IncompleteSignature, "lower-case header names"},
		{"empty signature", hdr("Authorization", "AWS4-HMAC-SHA256 Credential=A/20260101/r/s/aws4_request, SignedHeaders=host, Signature=", "X-Amz-Date", date),
			apierr.IncompleteSignature, "requires 'Signature' parameter"},
		{"bad x-amz-date", hdr("Authorization", testAuth, "X-Amz-Date", "2026-01-01T00:00:00Z"), apierr.InvalidSignature,
			"X-Amz-Date must be in the ISO8601 basic format \"yyyyMMdd'T'HHmmss'Z'\", got '2026-01-01T00:00:00Z'."},
		{"x-amz-date month 13", hdr("Authorization", testAuth, "X-Amz-Date", "20261301T000000Z"), apierr.InvalidSignature, "X-Amz-Date must be"},
		{"x-amz-date feb 30", hdr("Authorization", testAuth, "X-Amz-Date", "20260230T000000Z"), apierr.InvalidSignature, "X-Amz-Date must be"},
		{"x-amz-date hour 24", hdr("Authorization", testAuth, "X-Amz-Date", "20260101T240000Z"), apierr.InvalidSignature, "X-Amz-Date must be"},
		{"two x-amz-dates", hdr("Authorization", testAuth, "X-Amz-Date", date, "X-Amz-Date", date), apierr.InvalidSignature, "X-Amz-Date must be"},
		{"bad date header", hdr("Authorization", testAuth, "Date", "yesterday"), apierr.IncompleteSignature, "Date header must be"},
		{"date header not in GMT", hdr("Authorization", testAuth, "Date", "Mon, 02 Jan 2006 15:04:05 EST"), apierr.IncompleteSignature, "Date header must be"},
		{"two tokens", hdr("Authorization", testAuth, "X-Amz-Date", date, "X-Amz-Security-Token", "a", "X-Amz-Security-Token", "b"),
			apierr.IncompleteSignature, "at most one X-Amz-Security-Token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(&Request{Header: tt.header})
			if err == nil {
				t.Fatalf("Parse = %+v, want error", a)
			}
			wantErr(t, err, tt.kind, tt.msg)
		})
	}
}

func TestParseEchoIsBounded(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	_, err := Parse(&Request{Header: hdr("Authorization", long)})
	var e *apierr.Error
	if !errors.As(err, &e) || len(e.Message) > 1024 {
		t.Fatalf("message of %d bytes for a %d-byte header; want it clipped", len(e.Message), len(long))
	}
}

func TestParseAllocs(t *testing.T) {
	r := &Request{Header: hdr("Authorization", testAuth, "X-Amz-Date", "20260101T000000Z")}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := Parse(r); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("Parse allocates %v times, want 1", n)
	}
}

func TestParseDateHeaderFormats(t *testing.T) {
	want := time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, v := range []string{
		"Mon, 02 Jan 2006 15:04:05 GMT",
		"Mon, 02 Jan 2006 15:04:05 -0000",
		"Mon, 02 Jan 2006 17:04:05 +0200",
		"Monday, 02-Jan-06 15:04:05 GMT",
		"Mon Jan  2 15:04:05 2006",
		"20060102T150405Z",
	} {
		a, err := Parse(&Request{Header: hdr("Authorization", testAuth, "Date", v)})
		if err != nil {
			t.Errorf("Date %q: %v", v, err)
			continue
		}
		if !a.Time.Equal(want) || a.Time.Location() != time.UTC || a.TimeHeader != "date" {
			t.Errorf("Date %q: Time = %v from %q, want %v from date", v, a.Time, a.TimeHeader, want)
		}
	}
}

func TestErrorsDoNotEchoSignature(t *testing.T) {
	const sig = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, h := range []string{
		testAuth + ", junk",
		testAuth + ", Signature=" + sig,
		strings.Replace(testAuth, "HMAC-SHA256", "HMAC-SHA512", 1),
		"AWS4-HMAC-SHA256 Signature=" + sig,
	} {
		_, err := Parse(&Request{Header: hdr("Authorization", h, "X-Amz-Date", "20260101T000000Z")})
		if err == nil || strings.Contains(err.Error(), sig) {
			t.Errorf("Parse(%q) = %v, want an error without the signature", h, err)
		}
	}
}
