package main

// tenantdb table apply: create the AWS::DynamoDB::Table resources of a
// CloudFormation template through the DynamoDB API (CreateTable signed
// with SigV4, as any SDK would send it), idempotently.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/cfn"
)

var _ = register(&command{
	name:    "table",
	summary: "create the DynamoDB tables of a CloudFormation template",
	run:     runTable,
})

func runTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("table", []verb{
		{"apply", "apply -f TEMPLATE [--tenant-key KEY] [--parameter NAME=VALUE ...]", func(a []string, o, e io.Writer) error { return tableApply(ctx, a, o, e, os.Stdin) }},
	}, args, stdout, stderr)
}

// paramFlag collects repeated --parameter NAME=VALUE flags.
type paramFlag map[string]string

func (p paramFlag) String() string { return "" }

func (p paramFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	p[k] = v
	return nil
}

// applyReport is what --json prints.
type applyReport struct {
	Template string       `json:"template"`
	Tables   []cfn.Result `json:"tables"`
	Warnings []string     `json:"warnings"`
}

func tableApply(ctx context.Context, args []string, stdout, stderr io.Writer, stdin io.Reader) error {
	fs, cf := newClientFlagSet("table apply", stderr, os.Getenv)
	var file, tenantKey, region, stack string
	var wait time.Duration
	params := paramFlag{}
	fs.StringVar(&file, "f", "", "CloudFormation template, YAML or JSON (- for stdin)")
	fs.StringVar(&file, "file", "", "same as -f")
	fs.StringVar(&tenantKey, "tenant-key", os.Getenv("TENANTDB_TENANT_KEY"), "create the tables as this tenant (a full sk_... admin key): they belong to the tenant; default: the operator's shared tables (env TENANTDB_TENANT_KEY)")
	fs.Var(params, "parameter", "template parameter value NAME=VALUE (repeatable)")
	fs.StringVar(&region, "region", firstNonEmpty(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1"), "region the requests are signed for, and AWS::Region")
	fs.StringVar(&stack, "stack-name", "tenantdb", "AWS::StackName for the template")
	fs.DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for a new table to become ACTIVE")
	usageFunc(fs, stderr,
		"usage: tenantdb table apply -f TEMPLATE [flags]",
		"",
		"Creates every AWS::DynamoDB::Table of a CloudFormation template with CreateTable",
		"(and UpdateTimeToLive), signed with the operator credential (--credentials) or",
		"with --tenant-key. A table that exists as defined is left unchanged; if only its",
		"TTL or tags differ they are updated; any other difference is reported as a",
		"conflict and nothing is changed.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments (the template is given with -f)"); err != nil {
		return err
	}
	if file == "" {
		fs.Usage()
		return errors.New("-f TEMPLATE is required")
	}
	var data []byte
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	tmpl, err := cfn.Parse(data, cfn.Options{Parameters: params, StackName: stack, Region: region})
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(tmpl.Tables) == 0 {
		return fmt.Errorf("%s: the template has no %s resources", file, cfn.TableType)
	}
	caller, err := cf.dynamoCaller(tenantKey, region)
	if err != nil {
		return err
	}
	rep := applyReport{Template: file, Tables: []cfn.Result{}, Warnings: tmpl.Warnings}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	if !cf.json {
		for _, w := range tmpl.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	var failed int
	for _, t := range tmpl.Tables {
		r, err := cfn.Apply(ctx, caller, t, cfn.ApplyOptions{Wait: wait})
		if err != nil {
			failed++
		}
		rep.Tables = append(rep.Tables, r)
	}
	err = cf.output(stdout, rep, func(w *tabwriter.Writer) {
		for _, r := range rep.Tables {
			detail := strings.Join(r.Actions, ", ")
			switch r.Status {
			case cfn.Conflict, cfn.Updated:
				detail = strings.Join(append(r.Actions, r.Differences...), "; ")
			case cfn.Failed:
				detail = r.Error
			}
			line := fmt.Sprintf("%s\t%s\t(%s)", r.Status, r.TableName, r.LogicalID)
			if detail != "" {
				line += "\t" + detail
			}
			fmt.Fprintln(w, line)
		}
	})
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d tables not applied", failed, len(tmpl.Tables))
	}
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// dynamoCaller returns a DynamoDB API client for the global flags: the
// tenant key if given, else --key, else the credentials file.
func (cf *clientFlags) dynamoCaller(tenantKey, region string) (*dynamoCaller, error) {
	var k auth.APIKey
	var err error
	switch full := strings.TrimSpace(firstNonEmpty(tenantKey, cf.key)); {
	case full != "":
		if k, err = auth.ParseKey(full); err != nil {
			return nil, errors.New("the key is not a tenantdb key (sk_<env>_<tenant>_<id>_<secret>)")
		}
	default:
		k, err = auth.ReadCredentialsFile(cf.credentials, cf.profile)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no credentials at %s: start the server once (it writes the operator's there), or give --credentials, --key or --tenant-key", cf.credentials)
		}
		if err != nil {
			return nil, err
		}
	}
	return &dynamoCaller{
		endpoint: strings.TrimSuffix(cf.endpoint, "/") + "/",
		region:   region,
		creds:    aws.Credentials{AccessKeyID: k.AccessKeyID(), SecretAccessKey: k.Secret},
		client:   &http.Client{Timeout: 60 * time.Second},
		signer:   v4.NewSigner(),
	}, nil
}

// dynamoCaller sends DynamoDB JSON 1.0 requests signed with SigV4: the
// same requests an AWS SDK sends.
type dynamoCaller struct {
	endpoint, region string
	creds            aws.Credentials
	client           *http.Client
	signer           *v4.Signer
}

var _ cfn.Caller = (*dynamoCaller)(nil)

// apiError is an error response of the DynamoDB API.
type apiError struct {
	Op, Code, Message string
	Status            int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Code, e.Message)
}

// ErrorCode is DynamoDB's error type, such as ResourceNotFoundException.
func (e *apiError) ErrorCode() string { return e.Code }

// Call implements cfn.Caller.
func (c *dynamoCaller) Call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	sum := sha256.Sum256(body)
	if err := c.signer.SignHTTP(ctx, c.creds, req, hex.EncodeToString(sum[:]), "dynamodb", c.region, time.Now()); err != nil {
		return fmt.Errorf("%s: signing: %w", op, err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s: reading the response: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type     string `json:"__type"`
			Message  string `json:"message"`
			Message2 string `json:"Message"`
		}
		_ = json.Unmarshal(data, &e)
		code := e.Type[strings.LastIndexByte(e.Type, '#')+1:]
		if code == "" {
			code = fmt.Sprintf("HTTP %d", resp.StatusCode)
		}
		return &apiError{Op: op, Code: code, Message: firstNonEmpty(e.Message, e.Message2, strings.TrimSpace(string(data))), Status: resp.StatusCode}
	}
	if out == nil || len(data) == 0 { // TagResource and UntagResource answer no body
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decoding the response: %w", op, err)
	}
	return nil
}

var _ flag.Value = paramFlag(nil)
