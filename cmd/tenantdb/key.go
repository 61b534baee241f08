package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/auth"
)

var _ = register(&command{
	name:    "key",
	summary: "create, list, revoke and rotate a tenant's API keys",
	run:     runKey,
})

var _ = register(&command{
	name:    "session",
	summary: "mint temporary credentials for a tenant (token vending)",
	run:     runSession,
})

func runKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("key", []verb{
		{"create", "create --tenant ID [--role app|read|admin] [--env live|test] [--expires TIME|DURATION]", func(a []string, o, e io.Writer) error { return keyCreate(ctx, a, o, e) }},
		{"list", "list --tenant ID", func(a []string, o, e io.Writer) error { return keyList(ctx, a, o, e) }},
		{"revoke", "revoke --tenant ID KEY", func(a []string, o, e io.Writer) error { return keyRevoke(ctx, a, o, e) }},
		{"rotate", "rotate --tenant ID KEY [--grace DURATION]", func(a []string, o, e io.Writer) error { return keyRotate(ctx, a, o, e) }},
	}, args, stdout, stderr)
}

func printKeys(w *tabwriter.Writer, ks []client.Key) {
	fmt.Fprintln(w, "ACCESS KEY ID\tROLE\tENV\tSTATUS\tCREATED\tLAST USED\tEXPIRES")
	for _, k := range ks {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.AccessKeyID, k.Role, k.Env, k.Status, fmtTime(k.CreatedAt), fmtTimePtr(k.LastUsedAt), fmtTimePtr(k.ExpiresAt))
	}
}

// printNewKey shows a key with its secret, which is never shown again.
func printNewKey(w *tabwriter.Writer, k client.Key) {
	fmt.Fprintf(w, "tenant\t%s\n", k.TenantID)
	fmt.Fprintf(w, "role\t%s\n", k.Role)
	fmt.Fprintf(w, "env\t%s\n", k.Env)
	fmt.Fprintf(w, "access key id\t%s\n", k.AccessKeyID)
	fmt.Fprintf(w, "secret access key\t%s\n", k.SecretAccessKey)
	fmt.Fprintf(w, "key\t%s\n", k.Key)
	if k.ExpiresAt != nil {
		fmt.Fprintf(w, "expires\t%s\n", fmtTimePtr(k.ExpiresAt))
	}
	fmt.Fprintln(w, "\nThe secret is shown only now. Store it safely.")
}

func tenantFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "tenant", "", "tenant ID (or slug, for the operator)")
}

func keyCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("key create", stderr, os.Getenv)
	var tenant, expires string
	var req client.CreateKeyRequest
	tenantFlag(fs, &tenant)
	fs.StringVar(&req.Role, "role", "app", "app, read or admin")
	fs.StringVar(&req.Env, "env", "", "environment, e.g. live or test (default live; an admin key's own)")
	fs.StringVar(&expires, "expires", "", "expiry: an RFC 3339 time or a duration from now (default never)")
	usageFunc(fs, stderr, "usage: tenantdb key create --tenant ID [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if tenant == "" {
		return fmt.Errorf("--tenant is required")
	}
	if expires != "" {
		t, err := parseWhen(expires)
		if err != nil {
			return err
		}
		req.ExpiresAt = &t
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	k, err := c.CreateKey(ctx, tenant, req)
	if err != nil {
		return err
	}
	return cf.output(stdout, k, func(w *tabwriter.Writer) { printNewKey(w, k) })
}

func keyList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("key list", stderr, os.Getenv)
	var tenant string
	tenantFlag(fs, &tenant)
	usageFunc(fs, stderr, "usage: tenantdb key list --tenant ID [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 1 && tenant == "" {
		tenant = pos[0]
	} else if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if tenant == "" {
		return fmt.Errorf("--tenant is required")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	ks, err := c.Keys(ctx, tenant)
	if err != nil {
		return err
	}
	return cf.output(stdout, ks, func(w *tabwriter.Writer) { printKeys(w, ks) })
}

// keyArgs parses --tenant and one KEY argument; a full access key id
// names its tenant, so --tenant may be left out then.
func keyArgs(pos []string, tenant string) (string, string, error) {
	if err := needArgs(pos, 1, "a KEY (key id or access key id)"); err != nil {
		return "", "", err
	}
	key := pos[0]
	if tenant == "" {
		k, session, err := auth.ParseAccessKeyID(key)
		if err != nil || session {
			return "", "", fmt.Errorf("--tenant is required unless KEY is a full access key id")
		}
		tenant = k.Tenant.String()
	}
	return tenant, key, nil
}

func keyRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("key revoke", stderr, os.Getenv)
	var tenant string
	tenantFlag(fs, &tenant)
	usageFunc(fs, stderr, "usage: tenantdb key revoke [--tenant ID] KEY [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	tenant, key, err := keyArgs(pos, tenant)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	k, err := c.RevokeKey(ctx, tenant, key)
	if err != nil {
		return err
	}
	return cf.output(stdout, k, func(w *tabwriter.Writer) { printKeys(w, []client.Key{k}) })
}

func keyRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("key rotate", stderr, os.Getenv)
	var tenant string
	var grace time.Duration
	tenantFlag(fs, &tenant)
	fs.DurationVar(&grace, "grace", 0, "keep the old key valid this long (default: revoke it at once)")
	usageFunc(fs, stderr, "usage: tenantdb key rotate [--tenant ID] KEY [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	tenant, key, err := keyArgs(pos, tenant)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	k, err := c.RotateKey(ctx, tenant, key, grace)
	if err != nil {
		return err
	}
	return cf.output(stdout, k, func(w *tabwriter.Writer) { printNewKey(w, k) })
}

// runSession mints temporary credentials. With --json its output is also
// valid AWS CLI credential_process output:
//
//	[profile tenant-a]
//	credential_process = tenantdb session --tenant ID --role read --json
func runSession(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("session", stderr, os.Getenv)
	var tenant, tables, actions string
	var dur time.Duration
	var req client.SessionRequest
	tenantFlag(fs, &tenant)
	fs.StringVar(&req.Role, "role", "app", "app, read or admin")
	fs.StringVar(&req.Env, "env", "", "environment (default live; an admin key's own)")
	fs.StringVar(&tables, "tables", "", "comma-separated tables the credentials may use (default all)")
	fs.StringVar(&actions, "actions", "", "comma-separated DynamoDB actions the credentials may perform (default all the role allows)")
	fs.DurationVar(&dur, "duration", 15*time.Minute, "lifetime, at most 12h")
	usageFunc(fs, stderr, "usage: tenantdb session --tenant ID [flags]", "",
		"Prints temporary credentials (AccessKeyId, SecretAccessKey, SessionToken, Expiration).",
		"With --json the output is valid AWS credential_process output.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if tenant == "" {
		return fmt.Errorf("--tenant is required")
	}
	split := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	req.Tables, req.Actions = split(tables), split(actions)
	req.DurationSeconds = int(dur / time.Second)
	c, err := cf.client()
	if err != nil {
		return err
	}
	s, err := c.CreateSession(ctx, tenant, req)
	if err != nil {
		return err
	}
	return cf.output(stdout, s, func(w *tabwriter.Writer) {
		fmt.Fprintf(w, "tenant\t%s\n", s.TenantID)
		fmt.Fprintf(w, "role\t%s\n", s.Role)
		fmt.Fprintf(w, "env\t%s\n", s.Env)
		fmt.Fprintf(w, "expiration\t%s\n", fmtTime(s.Expiration))
		fmt.Fprintf(w, "aws_access_key_id\t%s\n", s.AccessKeyID)
		fmt.Fprintf(w, "aws_secret_access_key\t%s\n", s.SecretAccessKey)
		fmt.Fprintf(w, "aws_session_token\t%s\n", s.SessionToken)
	})
}
