package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// signedAt sends a ListTables signed with the default tenant's key as of
// signing time at, after edit (if any) changes the signed request, and
// returns the status, error code and message.
func signedAt(t *testing.T, srv *harness.Server, at time.Time, edit func(*http.Request)) (int, string, string) {
	t.Helper()
	body := "{}"
	req, err := http.NewRequest("POST", srv.Endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
	c := srv.Default
	const emptyBodyHash = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		req, emptyBodyHash, "dynamodb", harness.Region, at); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	json.Unmarshal(out, &e)
	return resp.StatusCode, e.Type[strings.LastIndexByte(e.Type, '#')+1:], e.Message
}

// TestSigV4Dates: a request time more than 15 minutes from the server's
// clock is InvalidSignatureException "Signature expired" or "Signature not
// yet current", whatever the credential scope's date says; a malformed
// X-Amz-Date is InvalidSignatureException too. The skew messages are
// AWS's; the malformed-date message is our wording.
func TestSigV4Dates(t *testing.T) {
	srv := harness.Start(t)
	now := time.Now().UTC()
	for _, tc := range []struct {
		name   string
		at     time.Time
		edit   func(*http.Request)
		code   string
		prefix string
	}{
		{"now", now, nil, "", ""},
		{"14 minutes ago", now.Add(-14 * time.Minute), nil, "", ""},
		{"20 minutes ago", now.Add(-20 * time.Minute), nil, "InvalidSignatureException", "Signature expired: "},
		{"2 days ago", now.Add(-48 * time.Hour), nil, "InvalidSignatureException", "Signature expired: "},
		{"20 minutes ahead", now.Add(20 * time.Minute), nil, "InvalidSignatureException", "Signature not yet current: "},
		{"2 days ahead", now.Add(48 * time.Hour), nil, "InvalidSignatureException", "Signature not yet current: "},
		{"old X-Amz-Date under today's scope", now, func(r *http.Request) {
			r.Header.Set("X-Amz-Date", now.Add(-48*time.Hour).Format("20060102T150405Z"))
		}, "InvalidSignatureException", "Signature expired: "},
		{"malformed X-Amz-Date", now, func(r *http.Request) { r.Header.Set("X-Amz-Date", "yesterday") },
			"InvalidSignatureException", "X-Amz-Date must be in the ISO8601 basic format \"yyyyMMdd'T'HHmmss'Z'\", got 'yesterday'."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code, msg := signedAt(t, srv, tc.at, tc.edit)
			if code != tc.code || !strings.HasPrefix(msg, tc.prefix) || (code == "") != (status == 200) || code != "" && status != 400 {
				t.Errorf("got %d %s %q, want %s %q...", status, code, msg, tc.code, tc.prefix)
			}
		})
	}
}
