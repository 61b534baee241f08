package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// raw sends body to the DynamoDB endpoint with target, signed with cred
// unless cred is nil, and returns the status and the error code of the
// answer ("" for a success).
func raw(t *testing.T, srv *harness.Server, cred *harness.Credential, target string, body io.Reader, length int64) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.Endpoint+"/", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
	}
	if cred != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		sum := sha256.Sum256(b)
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey},
			req, hex.EncodeToString(sum[:]), "dynamodb", harness.Region, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		return 200, ""
	}
	var e struct {
		Type string `json:"__type"`
	}
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("%s: error body %q is not JSON", target, out)
	}
	return resp.StatusCode, e.Type[strings.LastIndexByte(e.Type, '#')+1:]
}

// rawBody sends body signed with srv's default credential and returns the
// status and the answer's body.
func rawBody(t *testing.T, srv *harness.Server, target, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.Endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", target)
	sum := sha256.Sum256([]byte(body))
	cred := srv.Default
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey},
		req, hex.EncodeToString(sum[:]), "dynamodb", harness.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestMemberTypeWording: a member of the wrong JSON type gets DynamoDB's
// SerializationException wording (its deserializer's, which names the
// JSON token and the Java type, not the member).
func TestMemberTypeWording(t *testing.T) {
	srv, _ := start(t)
	for _, tc := range []struct{ target, body, want string }{
		{"DynamoDB_20120810.DescribeTable", `{"TableName":12}`, "NUMBER_VALUE cannot be converted to String"},
		{"DynamoDB_20120810.DescribeTable", `{"TableName":true}`, "TRUE_VALUE cannot be converted to String"},
		{"DynamoDB_20120810.DescribeTable", `{"TableName":{}}`, "Start of structure or map found where not expected"},
		{"DynamoDB_20120810.Query", `{"TableName":"t","Limit":"5"}`, "STRING_VALUE cannot be converted to Integer"},
		{"DynamoDB_20120810.PutItem", `{"TableName":"t","Item":[]}`,
			"Unrecognized collection type java.util.Map<java.lang.String, com.amazonaws.dynamodb.v20120810.AttributeValue>"},
		{"DynamoDB_20120810.GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"AttributesToGet":"pk"}`, "Unexpected field type"},
	} {
		status, body := rawBody(t, srv, tc.target, tc.body)
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if status != 400 || !strings.HasSuffix(e.Type, "#SerializationException") || e.Message != tc.want {
			t.Errorf("%s %s: got %d %s %q, want 400 SerializationException %q", tc.target, tc.body, status, e.Type, e.Message, tc.want)
		}
	}
}

// TestBadInput sends what clients should not, and checks for clean errors
// and a server that keeps serving.
func TestBadInput(t *testing.T) {
	srv, c := start(t)
	cred := &srv.Default
	createTable(t, c, "Things", keyDef{"pk", "S"}, nil, nil)
	for _, tc := range []struct {
		name       string
		cred       *harness.Credential
		target     string
		body       string
		wantStatus int
		wantCode   string
	}{
		{"malformed json", cred, "DynamoDB_20120810.PutItem", `{"TableName":"Things","Item":{"pk":{"S":"a"}`, 400, "SerializationException"},
		{"json array", cred, "DynamoDB_20120810.PutItem", `[]`, 400, "SerializationException"},
		{"empty body", cred, "DynamoDB_20120810.ListTables", ``, 400, "SerializationException"},
		{"binary garbage", cred, "DynamoDB_20120810.GetItem", "\x00\xff\xfe{", 400, "SerializationException"},
		{"wrong member type", cred, "DynamoDB_20120810.GetItem", `{"TableName":["Things"]}`, 400, "SerializationException"},
		{"unknown op", cred, "DynamoDB_20120810.DropEverything", `{}`, 400, "UnknownOperationException"},
		{"unsupported op", cred, "DynamoDB_20120810.CreateGlobalTable", `{"GlobalTableName":"Things","ReplicationGroup":[]}`, 400, "UnknownOperationException"},
		{"missing target", cred, "", `{}`, 400, "UnknownOperationException"},
		{"target of another service", cred, "Kinesis_20131202.ListStreams", `{}`, 400, "UnknownOperationException"},
		{"unsigned", nil, "DynamoDB_20120810.ListTables", `{}`, 400, "MissingAuthenticationTokenException"},
		{"deeply nested", cred, "DynamoDB_20120810.PutItem", `{"TableName":"Things","Item":{"pk":{"S":"a"},"m":` +
			strings.Repeat(`{"L":[`, 100) + `{"S":"x"}` + strings.Repeat(`]}`, 100) + `}}`, 400, "ValidationException"},
		{"fine", cred, "DynamoDB_20120810.ListTables", `{}`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := raw(t, srv, tc.cred, tc.target, strings.NewReader(tc.body), int64(len(tc.body)))
			if status != tc.wantStatus || code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", status, code, tc.wantStatus, tc.wantCode)
			}
		})
	}

	t.Run("oversized announced", func(t *testing.T) {
		status, code := raw(t, srv, nil, "DynamoDB_20120810.PutItem", &endless{}, 16<<20+1)
		if status != 413 || code != "RequestEntityTooLarge" {
			t.Errorf("got %d %s, want 413 RequestEntityTooLarge", status, code)
		}
	})
	t.Run("oversized chunked", func(t *testing.T) {
		status, code := raw(t, srv, nil, "DynamoDB_20120810.PutItem", io.LimitReader(&endless{}, 17<<20), -1)
		if status != 413 || code != "RequestEntityTooLarge" {
			t.Errorf("got %d %s, want 413 RequestEntityTooLarge", status, code)
		}
	})
	t.Run("not http", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Endpoint, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(conn, "\x16\x03\x01garbage that is not HTTP\r\n\r\n")
		line, _ := bufio.NewReader(conn).ReadString('\n')
		if !strings.Contains(line, "400") {
			t.Errorf("answer to garbage: %q", line)
		}
	})
	t.Run("stalled body does not block others", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Endpoint, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{")
		if _, err := c.ListTables(ctxT(t), &dynamodb.ListTablesInput{}); err != nil {
			t.Errorf("ListTables while another request stalls: %v", err)
		}
	})

	// Still healthy.
	resp, err := http.Get(srv.Endpoint + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health after bad input: %d", resp.StatusCode)
	}
	if _, err := c.PutItem(ctxT(t), &dynamodb.PutItemInput{TableName: aws.String("Things"), Item: item("pk", S("ok"))}); err != nil {
		t.Errorf("PutItem after bad input: %v", err)
	}
}

// endless reads as an unending stream of 'x'.
type endless struct{}

func (*endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
