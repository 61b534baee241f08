package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// The credentials and time of AWS's SigV4 test suite
// (aws-sig-v4-test-suite; the same values appear in the IAM user guide).
const (
	suiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	suiteDate   = "20150830T123600Z"
	suiteCred   = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
)

var suiteTime = time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)

// TestSuiteVectors checks requests and signatures published in AWS's SigV4
// test suite.
func TestSuiteVectors(t *testing.T) {
	tests := []struct {
		name, method, path, query, body string
		header                          map[string][]string
		signed, sig                     string
	}{
		{name: "get-vanilla", method: "GET", path: "/",
			signed: "host;x-amz-date", sig: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{name: "get-vanilla-query-order-key-case", method: "GET", path: "/", query: "Param2=value2&Param1=value1",
			signed: "host;x-amz-date", sig: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
		{name: "get-vanilla-empty-query-key", method: "GET", path: "/", query: "Param1=value1",
			signed: "host;x-amz-date", sig: "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"},
		{name: "post-vanilla", method: "POST", path: "/",
			signed: "host;x-amz-date", sig: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
		{name: "get-header-value-trim", method: "GET", path: "/",
			header: hdr("My-Header1", " value1", "My-Header2", ` "a   b   c"`),
			signed: "host;my-header1;my-header2;x-amz-date", sig: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
		{name: "post-x-www-form-urlencoded", method: "POST", path: "/", body: "Param1=value1",
			header: hdr("Content-Type", "application/x-www-form-urlencoded"),
			signed: "content-type;host;x-amz-date", sig: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
	}
	key := SigningKey(suiteSecret, "20150830", "us-east-1", "service")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hdr("X-Amz-Date", suiteDate,
				"Authorization", suiteCred+"SignedHeaders="+tt.signed+", Signature="+tt.sig)
			for k, v := range tt.header {
				h[k] = v
			}
			r := &Request{Method: tt.method, Path: tt.path, RawQuery: tt.query,
				Host: "example.amazonaws.com", Header: h, Body: []byte(tt.body)}
			a, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(r, a, key, suiteTime.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			r.Method = "PUT"
			wantErr(t, Verify(r, a, key, suiteTime), apierr.InvalidSignature,
				"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
		})
	}
}

func TestSigningKey(t *testing.T) {
	// From the IAM user guide's key-derivation example.
	got := hex.EncodeToString(SigningKey(suiteSecret, "20150830", "us-east-1", "iam"))
	const want = "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
	if got != want {
		t.Errorf("SigningKey = %s, want %s", got, want)
	}
}

func TestHMACMatchesCryptoHMAC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, klen := range []int{0, 1, 32, 63, 64, 65, 200} {
		for _, mlen := range []int{0, 1, 55, 56, 64, 119, 1000} {
			key := make([]byte, klen)
			msg := make([]byte, mlen)
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			want := m.Sum(nil)
			if got := hmacSHA256(key, msg); !hmac.Equal(got[:], want) {
				t.Errorf("key %d, msg %d bytes: hmacSHA256 = %x, want %x", klen, mlen, got, want)
			}
		}
	}
}

func TestCanonicalURI(t *testing.T) {
	tests := []struct{ path, want string }{
		{"", "/"},
		{"/", "/"},
		{"/foo/bar-baz_qux.~", "/foo/bar-baz_qux.~"},
		{"/a%20b", "/a%2520b"}, // the escaped path is encoded again, as the SDKs do
		{"/a+b", "/a%2Bb"},
		{"/a//b/../c", "/a//b/../c"}, // not normalized
		{"/\xe1\x88\xb4", "/%E1%88%B4"},
	}
	for _, tt := range tests {
		if got := string(appendURI(nil, tt.path)); got != tt.want {
			t.Errorf("appendURI(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestCanonicalQuery(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"", ""},
		{"b=2&a=1", "a=1&b=2"},
		{"a=2&a=1&a=10", "a=1&a=10&a=2"},
		{"a", "a="},
		{"a=&b", "a=&b="},
		{"&&a=1&", "a=1"},
		{"=v", "=v"},
		{"k=a+b", "k=a%20b"},
		{"k=a%20b", "k=a%20b"},
		{"k=%7e%2f%3D", "k=~%2F%3D"},
		{"k=*'()!", "k=%2A%27%28%29%21"},
		{"%E1%88%B4=1", "%E1%88%B4=1"},
		{"Z=1&a=1&_=1&~=1&-=1", "-=1&Z=1&_=1&a=1&~=1"},
	}
	for _, tt := range tests {
		got, err := appendQuery(nil, tt.raw)
		if err != nil || string(got) != tt.want {
			t.Errorf("appendQuery(%q) = %q, %v, want %q", tt.raw, got, err, tt.want)
		}
	}
	for _, raw := range []string{"a=1;b=2", "a=%zz", "a%=1"} {
		if _, err := appendQuery(nil, raw); err == nil {
			t.Errorf("appendQuery(%q) succeeded, want an error", raw)
		}
	}
}

func TestAppendTrimmed(t *testing.T) {
	tests := []struct{ v, want string }{
		{"", ""},
		{"a", "a"},
		{"  a  ", "a"},
		{"\t a b  c \t", "a b c"},
		{"a \t  b", "a \t b"}, // only runs of spaces collapse, as in aws-sdk-go-v2
		{`"a   b   c"`, `"a b c"`},
	}
	for _, tt := range tests {
		if got := string(appendTrimmed(nil, tt.v)); got != tt.want {
			t.Errorf("appendTrimmed(%q) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestHeaderValues(t *testing.T) {
	h := hdr("X-Amz-Target", "t", "Content-Type", "c", "weird_name", "w", "x-lower", "l")
	for name, want := range map[string]string{"x-amz-target": "t", "content-type": "c", "weird_name": "w", "x-lower": "l", "absent": ""} {
		if got := strings.Join(headerValues(h, name), ","); got != want {
			t.Errorf("headerValues(%q) = %q, want %q", name, got, want)
		}
	}
}

// suiteRequest is get-vanilla, valid at suiteTime.
func suiteRequest() (*Request, []byte) {
	r := &Request{Method: "GET", Path: "/", Host: "example.amazonaws.com", Header: hdr(
		"X-Amz-Date", suiteDate,
		"Authorization", suiteCred+"SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")}
	return r, SigningKey(suiteSecret, "20150830", "us-east-1", "service")
}

func TestVerifyClock(t *testing.T) {
	r, key := suiteRequest()
	a, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{-MaxSkew, -time.Second, 0, time.Second, MaxSkew} {
		if err := Verify(r, a, key, suiteTime.Add(d)); err != nil {
			t.Errorf("now = signing time %+v: %v", d, err)
		}
	}
	wantErr(t, Verify(r, a, key, suiteTime.Add(20*time.Minute)), apierr.InvalidSignature,
		"Signature expired: 20150830T123600Z is now earlier than 20150830T124100Z (20150830T125600Z - 15 min.)")
	wantErr(t, Verify(r, a, key, suiteTime.Add(MaxSkew+time.Second)), apierr.InvalidSignature,
		"Signature expired: 20150830T123600Z is now earlier than 20150830T123601Z (20150830T125101Z - 15 min.)")
	wantErr(t, Verify(r, a, key, suiteTime.Add(-20*time.Minute)), apierr.InvalidSignature,
		"Signature not yet current: 20150830T123600Z is still later than 20150830T123100Z (20150830T121600Z + 15 min.)")
	// now in another zone is the same instant.
	if err := Verify(r, a, key, suiteTime.In(time.FixedZone("x", -8*3600))); err != nil {
		t.Errorf("now in UTC-8: %v", err)
	}
}

func TestVerifyErrors(t *testing.T) {
	base := func() (*Request, *Auth, []byte) {
		r, key := suiteRequest()
		a, err := Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		return r, a, key
	}
	tests := []struct {
		name   string
		mutate func(r *Request, a *Auth)
		kind   apierr.Kind
		msg    string
	}{
		{"host not signed", func(r *Request, a *Auth) { a.SignedHeaders = []string{"x-amz-date"} },
			apierr.IncompleteSignature, "'Host' must be a 'SignedHeader' in the AWS Authorization."},
		{"x-amz-date not signed", func(r *Request, a *Auth) { a.SignedHeaders = []string{"host"} },
			apierr.IncompleteSignature, "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization."},
		{"date not signed", func(r *Request, a *Auth) { a.TimeHeader = "date" },
			apierr.IncompleteSignature, "'Date' must be a 'SignedHeader' in the AWS Authorization."},
		{"no time header", func(r *Request, a *Auth) { a.TimeHeader = "" },
			apierr.IncompleteSignature, "requires existence of either a 'X-Amz-Date' or a 'Date' header"},
		{"unsigned x-amz-target", func(r *Request, a *Auth) { r.Header["X-Amz-Target"] = []string{"DynamoDB_20120810.DeleteTable"} },
			apierr.IncompleteSignature, "There were headers present in the request which were not signed: x-amz-target."},
		{"unsigned token, odd case", func(r *Request, a *Auth) { r.Header["x-amz-SECURITY-token"] = []string{"t"} },
			apierr.IncompleteSignature, "not signed: x-amz-security-token."},
		{"scope date is not the request date", func(r *Request, a *Auth) { a.Date = "20150831" },
			apierr.InvalidSignature, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '20150831' != '20150830', from '20150830T123600Z'."},
		{"content sha mismatch", func(r *Request, a *Auth) {
			r.Header["X-Amz-Content-Sha256"] = []string{strings.Repeat("0", 64)}
			a.SignedHeaders = append(a.SignedHeaders, "x-amz-content-sha256")
		}, apierr.InvalidSignature, "The provided 'x-amz-content-sha256' header does not match what was computed."},
		{"unsigned payload", func(r *Request, a *Auth) {
			r.Header["X-Amz-Content-Sha256"] = []string{"UNSIGNED-PAYLOAD"}
			a.SignedHeaders = append(a.SignedHeaders, "x-amz-content-sha256")
		}, apierr.InvalidSignature, "unsigned and streaming payloads are not supported, got 'UNSIGNED-PAYLOAD'"},
		{"two content shas", func(r *Request, a *Auth) {
			r.Header["X-Amz-Content-Sha256"] = []string{"a", "b"}
			a.SignedHeaders = append(a.SignedHeaders, "x-amz-content-sha256")
		}, apierr.IncompleteSignature, "at most one X-Amz-Content-Sha256"},
		{"short signature", func(r *Request, a *Auth) { a.Signature = a.Signature[:62] }, apierr.InvalidSignature, mismatchMessage},
		{"non-hex signature", func(r *Request, a *Auth) { a.Signature = "z" + a.Signature[1:] }, apierr.InvalidSignature, mismatchMessage},
		{"bad query", func(r *Request, a *Auth) { r.RawQuery = "a=%zz" }, apierr.InvalidSignature, mismatchMessage},
		{"other host", func(r *Request, a *Auth) { r.Host = "example.amazonaws.com.evil" }, apierr.InvalidSignature, mismatchMessage},
		{"other path", func(r *Request, a *Auth) { r.Path = "/x" }, apierr.InvalidSignature, mismatchMessage},
		{"body added", func(r *Request, a *Auth) { r.Body = []byte{0} }, apierr.InvalidSignature, mismatchMessage},
		{"other region", func(r *Request, a *Auth) { a.Region = "us-west-2" }, apierr.InvalidSignature, mismatchMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, a, key := base()
			tt.mutate(r, a)
			wantErr(t, Verify(r, a, key, suiteTime), tt.kind, tt.msg)
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		r, a, _ := base()
		wantErr(t, Verify(r, a, SigningKey("other", "20150830", "us-east-1", "service"), suiteTime), apierr.InvalidSignature, mismatchMessage)
	})
	t.Run("upper-case signature hex", func(t *testing.T) {
		r, a, key := base()
		a.Signature = strings.ToUpper(a.Signature)
		if err := Verify(r, a, key, suiteTime); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCheckScope(t *testing.T) {
	a := &Auth{Region: "us-east-1", Service: "dynamodb"}
	if err := a.CheckScope("us-east-1", "dynamodb"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, a.CheckScope("eu-west-1", "dynamodb"), apierr.InvalidSignature, "Credential should be scoped to a valid region, not 'us-east-1'.")
	wantErr(t, a.CheckScope("us-east-1", "streams"), apierr.InvalidSignature, "Credential should be scoped to correct service: 'streams'.")
}

func TestVerifyAllocs(t *testing.T) {
	r, key := suiteRequest()
	a, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := Verify(r, a, key, suiteTime); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Verify allocates %v times, want 0", n)
	}
}

func BenchmarkHMAC(b *testing.B) {
	key := SigningKey(suiteSecret, "20150830", "us-east-1", "dynamodb")
	msg := []byte(strings.Repeat("s", 140)) // a string to sign's length
	b.Run("hmacSHA256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hmacSHA256(key, msg)
		}
	})
	b.Run("crypto/hmac", func(b *testing.B) {
		b.ReportAllocs()
		var out [sha256.Size]byte
		for b.Loop() {
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			m.Sum(out[:0])
		}
	})
}

func TestAppendAmzDate(t *testing.T) {
	for _, tm := range []time.Time{
		suiteTime,
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(1<<40, 0).UTC(),
	} {
		if got, want := string(appendAmzDate(nil, tm)), tm.Format(amzDateLayout); got != want {
			t.Errorf("appendAmzDate(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestSigningKeyMatchesCryptoHMAC(t *testing.T) {
	ref := func(secret, date, region, service string) []byte {
		k := []byte("AWS4" + secret)
		for _, p := range []string{date, region, service, "aws4_request"} {
			m := hmac.New(sha256.New, k)
			m.Write([]byte(p))
			k = m.Sum(nil)
		}
		return k
	}
	for _, tc := range [][4]string{
		{"", "20260101", "us-east-1", "dynamodb"},
		{strings.Repeat("s", 60), "20260101", "r", "s"},
		{strings.Repeat("s", 61), "20260101", "r", "s"}, // "AWS4"+secret is over one block
		{strings.Repeat("s", 500), "20260101", strings.Repeat("r", 100), strings.Repeat("s", 100)},
	} {
		if got, want := SigningKey(tc[0], tc[1], tc[2], tc[3]), ref(tc[0], tc[1], tc[2], tc[3]); !hmac.Equal(got, want) {
			t.Errorf("SigningKey(%d-byte secret, %q, %d-byte region, %d-byte service) = %x, want %x",
				len(tc[0]), tc[1], len(tc[2]), len(tc[3]), got, want)
		}
	}
}
