package sigv4_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/internal/sigv4"
)

// sdkRequest is a DynamoDB GetItem as aws-sdk-go-v2 sends it, signed by
// its signer, converted the way the server converts requests.
func sdkRequest(b *testing.B, bodySize int, token string) (sigv4.Request, *http.Request, time.Time) {
	b.Helper()
	body := bytes.Repeat([]byte("x"), bodySize)
	req, err := http.NewRequest("POST", "http://127.0.0.1:8000/", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range map[string]string{
		"Accept-Encoding":       "identity",
		"Amz-Sdk-Invocation-Id": "3f1c2a57-0b8e-4d2a-9c1e-6a7f0d9e8b21",
		"Amz-Sdk-Request":       "attempt=1; max=3",
		"Content-Type":          "application/x-amz-json-1.0",
		"User-Agent":            "aws-sdk-go-v2/1.41.0 ua/2.1 os/linux lang/go#1.26 md/GOOS#linux api/dynamodb#1.53.0",
		"X-Amz-Target":          "DynamoDB_20120810.GetItem",
	} {
		req.Header.Set(k, v)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, sha256hex(body), "dynamodb", "us-east-1", now); err != nil {
		b.Fatal(err)
	}
	// What Go's server would hand over: Host out of the header map,
	// Content-Length in it.
	h := req.Header.Clone()
	h.Set("Content-Length", fmt.Sprint(len(body)))
	r := sigv4.Request{Method: "POST", Path: "/", Host: req.URL.Host, Header: h, Body: body}
	if _, err := verify(r, now); err != nil {
		b.Fatal(err)
	}
	return r, req, now
}

// BenchmarkParseVerify is the server's per-request cost with a cached
// signing key.
func BenchmarkParseVerify(b *testing.B) {
	for _, tc := range []struct {
		size  int
		token string
	}{{100, ""}, {100, testToken}, {4 << 10, ""}, {64 << 10, ""}} {
		b.Run(fmt.Sprintf("body=%d/token=%t", tc.size, tc.token != ""), func(b *testing.B) {
			r, _, now := sdkRequest(b, tc.size, tc.token)
			key := sigv4.SigningKey(testSecret, "20260101", "us-east-1", "dynamodb")
			b.SetBytes(int64(tc.size))
			b.ReportAllocs()
			for b.Loop() {
				a, err := sigv4.Parse(&r)
				if err != nil {
					b.Fatal(err)
				}
				if err := sigv4.Verify(&r, a, key, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	r, _, _ := sdkRequest(b, 100, "")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sigv4.Parse(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSigningKey is the extra cost of a signing-key cache miss.
func BenchmarkSigningKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sigv4.SigningKey(testSecret, "20260101", "us-east-1", "dynamodb")
	}
}

// BenchmarkBaselineSDKSign is the baseline for the ratios in the report:
// aws-sdk-go-v2 signing the same 100-byte request (what a client pays per
// call, key derivation cached by the SDK).
func BenchmarkBaselineSDKSign(b *testing.B) {
	_, req, now := sdkRequest(b, 100, "")
	signer := v4.NewSigner()
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	hash := sha256hex(bytes.Repeat([]byte("x"), 100))
	b.ReportAllocs()
	for b.Loop() {
		if err := signer.SignHTTP(context.Background(), creds, req, hash, "dynamodb", "us-east-1", now); err != nil {
			b.Fatal(err)
		}
	}
}
