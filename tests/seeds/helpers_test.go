package seeds

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/internal/cfn"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// seedDir holds verbatim copies of the seed documents the tests check
// against (see its README.md).
const seedDir = "testdata/seeds"

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawClient sends DynamoDB JSON 1.0 requests signed with SigV4 for one
// credential, and decodes responses into plain JSON values: what the AWS
// CLI prints is compared with it without translation. It implements
// cfn.Caller.
type rawClient struct {
	endpoint string
	cred     harness.Credential
}

var _ cfn.Caller = rawClient{}

// apiError is an error answer of the DynamoDB API.
type apiError struct{ code, msg string }

func (e *apiError) Error() string     { return e.code + ": " + e.msg }
func (e *apiError) ErrorCode() string { return e.code }

var signer = v4.NewSigner()

func (c rawClient) Call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: c.cred.AccessKeyID, SecretAccessKey: c.cred.SecretAccessKey}
	if err := signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", harness.Region, time.Now()); err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		return &apiError{code: e.Type[strings.LastIndexByte(e.Type, '#')+1:], msg: e.Message}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// call is Call for tests: it fails t on error and returns the response as
// a JSON object.
func (c rawClient) call(t *testing.T, op string, in any) map[string]any {
	t.Helper()
	var out map[string]any
	if err := c.Call(ctxT(t), op, in, &out); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return out
}

// items returns the Items of a Query or Scan response.
func items(out map[string]any) []map[string]any {
	var its []map[string]any
	raw, _ := out["Items"].([]any)
	for _, r := range raw {
		its = append(its, r.(map[string]any))
	}
	return its
}

// s returns the string value of attribute name of a DynamoDB-JSON item.
func s(it map[string]any, name string) string {
	v, _ := it[name].(map[string]any)
	str, _ := v["S"].(string)
	return str
}

// num returns the number (as a string) of attribute name of a
// DynamoDB-JSON item.
func num(it map[string]any, name string) string {
	v, _ := it[name].(map[string]any)
	n, _ := v["N"].(string)
	return n
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// awsEnv is a user's AWS configuration in a temporary directory: a
// credentials file with one profile per tenant key and a config file
// giving each profile a region and JSON output.
type awsEnv struct {
	srv *harness.Server
	env []string
}

func newAWSEnv(t *testing.T, srv *harness.Server, profiles map[string]harness.Credential) *awsEnv {
	t.Helper()
	dir := t.TempDir()
	var creds, config strings.Builder
	for name, c := range profiles {
		fmt.Fprintf(&creds, "[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n", name, c.AccessKeyID, c.SecretAccessKey)
		fmt.Fprintf(&config, "[profile %s]\nregion = %s\noutput = json\n\n", name, harness.Region)
	}
	credPath, configPath := filepath.Join(dir, "credentials"), filepath.Join(dir, "config")
	if err := os.WriteFile(credPath, []byte(creds.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configPath, []byte(config.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_SHARED_CREDENTIALS_FILE="+credPath, "AWS_CONFIG_FILE="+configPath,
		"AWS_PAGER=", "AWS_EC2_METADATA_DISABLED=true")
	return &awsEnv{srv: srv, env: env}
}

// result is what a command printed and its exit code.
type result struct {
	out    map[string]any // stdout as JSON (nil if empty)
	stderr string
	code   int
}

// shell runs one command line of a seed document with bash, adding only
// --endpoint-url and --profile, and returns what it printed.
func (e *awsEnv) shell(t *testing.T, profile, command string) result {
	t.Helper()
	script := joinLines(command) + ` --endpoint-url "$1" --profile "$2"`
	cmd := exec.Command("bash", "-c", script, "bash", e.srv.Endpoint, profile)
	cmd.Env = e.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", command, err)
	}
	if b := bytes.TrimSpace(stdout.Bytes()); len(b) > 0 {
		if err := json.Unmarshal(b, &r.out); err != nil {
			t.Fatalf("%s\nprinted non-JSON %q: %v", command, b, err)
		}
	}
	return r
}

// mustShell is shell for a command that must succeed.
func (e *awsEnv) mustShell(t *testing.T, profile, command string) map[string]any {
	t.Helper()
	r := e.shell(t, profile, command)
	if r.code != 0 {
		t.Fatalf("%s\nexit %d: %s", joinLines(command), r.code, r.stderr)
	}
	return r.out
}

// joinLines joins a command printed over several lines as the shell joins
// lines ending in a backslash: a line break outside quotes separates
// words; inside quotes it is part of the quoted text.
func joinLines(cmd string) string {
	var b strings.Builder
	var quote rune
	for _, r := range cmd {
		switch {
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && r == '\n':
			r = ' '
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

func needAWSCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the AWS CLI is not installed (.ci/run installs it)")
	}
}
