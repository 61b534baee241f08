package main

// `tenantdb verify`: attacks a deployment's tenant isolation from two
// scratch tenants and reports (internal/verify).

import (
	"context"
	"io"
	"os"

	"github.com/tenantdb/tenantdb/internal/verify"
)

var _ = register(&command{
	name:    "verify",
	summary: "attack a deployment's tenant isolation from scratch tenants and report leaks",
	run:     runVerify,
})

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("verify", stderr, os.Getenv)
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	usageFunc(fs, stderr, "usage: tenantdb verify --endpoint URL --credentials OPERATOR_FILE [--json]",
		"",
		"Checks a running deployment (run it after every upgrade): creates two scratch",
		"tenants with keys, and scratch tables (tdbverify_*) in every isolation mode;",
		"attacks every surface from one tenant on the other (keys, indexes, page",
		"tokens, batches, transactions, counts, error messages, TTL, tags, streams,",
		"backups and point-in-time restore, exports and imports, webhook",
		"subscriptions, aggregates, encryption, admin routes, sessions, the web",
		"console, environments, suspension, revocation) and checks that the",
		"refusals are audited; prints a report (a family whose feature the server",
		"does not serve is SKIPPED, with the server's reason); deletes everything",
		"it created, also when interrupted; and exits 1 on any leak. It needs the",
		"operator's key and never touches other tenants' data.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	k, err := cf.apiKey()
	if err != nil {
		return err
	}
	o := verify.Options{
		Endpoint: cf.endpoint,
		Operator: verify.Credential{AccessKeyID: k.AccessKeyID(), SecretAccessKey: k.Secret, Key: k.String()},
	}
	if !*quiet {
		o.Progress = stderr
	}
	return verify.Check(ctx, o, stdout, cf.json)
}
