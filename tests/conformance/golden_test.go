package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/tests/harness"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/golden with the server's current answers")

// TestGolden replays each file of testdata/golden against a fresh server:
// a sequence of raw requests, each followed by the exact response (status
// and body, keys sorted, volatile members masked). With -rewrite the
// responses are regenerated; review the diff.
//
//	=== PutItem
//	{"TableName": ...}
//	--- 200
//	{...}
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			srv := harness.Start(t)
			var out strings.Builder
			for i, chunk := range strings.Split("\n"+string(data), "\n=== ")[1:] {
				op, rest, _ := strings.Cut(chunk, "\n")
				body, want, _ := strings.Cut(rest, "\n--- ")
				body = strings.TrimSpace(body)
				status, resp := signedCall(t, srv, op, body)
				got := fmt.Sprintf("%d\n%s", status, maskJSON(t, resp))
				if !*rewrite && strings.TrimSpace(got) != strings.TrimSpace(want) {
					t.Errorf("%s: request %d (%s)\n%s\ngot:\n%s\nwant:\n%s", path, i+1, op, body, got, want)
				}
				if i > 0 {
					out.WriteString("\n")
				}
				fmt.Fprintf(&out, "=== %s\n%s\n--- %s\n", op, body, got)
			}
			if *rewrite {
				if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// signedCall sends one DynamoDB request signed with the default tenant's key.
func signedCall(t *testing.T, srv *harness.Server, op, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.Endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	sum := sha256.Sum256([]byte(body))
	c := srv.Default
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		req, hex.EncodeToString(sum[:]), "dynamodb", harness.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// volatile members differ from run to run.
var volatile = map[string]string{
	"CreationDateTime":                  "<time>",
	"LastUpdateToPayPerRequestDateTime": "<time>",
	"LastIncreaseDateTime":              "<time>",
	"LastDecreaseDateTime":              "<time>",
	"TableId":                           "<id>",
	"LatestStreamLabel":                 "<label>",
	"LatestStreamArn":                   "<arn>",
}

// maskJSON re-indents a JSON body with sorted keys and volatile members
// masked; a tenant id inside ARNs or messages is masked too.
func maskJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(b)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if m, ok := volatile[k]; ok {
					x[k] = m
					continue
				}
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(walk(v)); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(out.String(), "\n")
}
