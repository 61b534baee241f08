// Package verify attacks a running tenantdb deployment the way the
// isolation suite (tests/isolation) does, as a product feature: `tenantdb
// verify` runs it after an upgrade to prove the deployment still keeps
// tenants apart.
//
// It is a black-box attacker: it talks to the server only through the
// public admin client (package client) and aws-sdk-go-v2, with the
// operator's credentials. It creates two scratch tenants (A, the attacker,
// and B, the victim, with a second environment of B), scratch tables in
// every isolation mode (shared namespace, leading-keys and silo tables,
// and tenant-owned tables), plants a random secret in every item and tag
// of each, and then lets A (and B's other environment) attack every
// surface: keys, indexes, page tokens, batches, transactions, counts,
// error messages, TTL, tags, DynamoDB Streams, backups and point-in-time
// recovery, exports and imports, webhook subscriptions, aggregates,
// per-tenant encryption, the admin routes, sessions, the web console (as a
// browser), environments, suspension and revocation; and it checks that
// the attacker's refused attempts are in the attacker's own audit log.
// A family whose feature the server does not serve (a gateway over a
// remote backend has no backups, for instance) is reported as skipped,
// with the server's reason. Every answer an attacker receives is scanned
// for the victims' secrets, ids and key ids; every attack that should be
// refused and succeeds, every count that includes another tenant's items,
// every change to the victim's items and every error message that differs
// between "another tenant's" and "does not exist" is a leak.
//
// It never touches real tenants: it names only the tenants and tables it
// created (tables named tdbverify_<run>_*), and deletes all of them when
// it ends, also when it fails or is interrupted. For the minutes of a run
// the scratch shared tables appear, empty, in every tenant's ListTables.
// Deleting the scratch tenants removes their exports' files from the
// server's export root.
package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/client"
)

// Credential is an API key: the SigV4 pair and the full key (the admin
// API's bearer token).
type Credential struct {
	AccessKeyID, SecretAccessKey, Key string
}

// Options configure Run.
type Options struct {
	// Endpoint is the server's base URL.
	Endpoint string
	// Operator is the operator's key.
	Operator Credential
	// Region is the region requests are signed for; "" means us-east-1.
	Region string
	// Progress, if set, receives a line per attack family.
	Progress io.Writer
	// Transport is the HTTP transport; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// MaxAttempts is how often a DynamoDB request is sent before its
	// failure (network error, throttling, 5xx) stands; 0 means the SDK's
	// default (3, with backoff).
	MaxAttempts int
}

// Family is the result of one family of attacks.
type Family struct {
	Name     string `json:"family"`
	Attempts int    `json:"attempts"`
	Leaks    int    `json:"leaks"`
	// Inconclusive counts attempts whose last answer was a failure (the
	// server unreachable, throttling, a 5xx): they prove nothing.
	Inconclusive int      `json:"inconclusive"`
	Findings     []string `json:"findings,omitempty"`
	// Skipped, if set, says why the family did not run: the server does
	// not serve its feature (a gateway over a remote backend refuses
	// backups, for instance). A skipped family is neither a pass nor a
	// leak.
	Skipped string `json:"skipped,omitempty"`
}

// Report is the result of a run.
type Report struct {
	Endpoint string    `json:"endpoint"`
	Run      string    `json:"run"`
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	Attempts int       `json:"attempts"`
	Leaks    int       `json:"leaks"`
	// Inconclusive counts the attempts that proved nothing (see Family).
	Inconclusive int `json:"inconclusive"`
	// Skipped counts the families that did not run (see Family.Skipped).
	Skipped  int      `json:"skipped"`
	Families []Family `json:"families"`
	// Cleanup lists what could not be deleted (empty when all was).
	Cleanup []string `json:"cleanup_errors,omitempty"`
}

// ErrLeaks is returned by Report.Err when a run found leaks;
// ErrInconclusive when it found none but some attempts proved nothing.
var (
	ErrLeaks        = errors.New("verify: isolation leaks found")
	ErrInconclusive = errors.New("verify: inconclusive")
)

// Err returns nil if r found no leak and every attempt was answered, an
// error wrapping ErrLeaks if it found leaks, and one wrapping
// ErrInconclusive if some attempts got no answer.
func (r *Report) Err() error {
	if r.Leaks > 0 {
		return fmt.Errorf("%w: %d of %d attempts leaked", ErrLeaks, r.Leaks, r.Attempts)
	}
	if r.Inconclusive > 0 {
		return fmt.Errorf("%w: %d of %d attempts got no answer (unreachable, throttled or a server error); run it again", ErrInconclusive, r.Inconclusive, r.Attempts)
	}
	return nil
}

// Families are the attack families, in the order they run.
var Families = []string{
	"counts", "indexes", "page-tokens", "error-messages", "keys", "batches", "transactions",
	"ttl", "tags", "streams", "backups", "exports", "subscriptions", "aggregates", "encryption",
	"admin-routes", "sessions", "console", "environments", "revocation", "suspension", "audit",
}

// Run sets up the scratch tenants and tables, runs every family of
// attacks and cleans up. The error is about the run itself (the server
// unreachable, the credentials not the operator's, the setup refused); the
// leaks are in the Report (see Report.Err). What Run created is deleted
// even when ctx is cancelled.
func Run(ctx context.Context, o Options) (rep *Report, err error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	r := &run{o: o, id: randHex(4), fams: map[string]*Family{}}
	rep = &Report{Endpoint: o.Endpoint, Run: r.id, Started: time.Now().UTC()}
	for _, f := range Families {
		r.fams[f] = &Family{Name: f}
	}
	r.op = &client.Client{Endpoint: o.Endpoint, Key: o.Operator.Key, HTTP: &http.Client{Transport: o.Transport, Timeout: time.Minute}}
	who, err := r.op.WhoAmI(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: the operator key: %w", err)
	}
	if who.Role != "operator" {
		return nil, fmt.Errorf("verify: the credentials are a %s key of a tenant; verify needs the operator's", who.Role)
	}
	r.opDB = r.dynamo(o.Operator, "", nil)

	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		rep.Cleanup = r.cleanup(cctx)
		rep.Duration = time.Since(rep.Started).Round(time.Millisecond).String()
	}()
	if err := r.setup(ctx); err != nil {
		return rep, fmt.Errorf("verify: setting up: %w", err)
	}
	attacks := map[string]func(context.Context){
		"counts": r.counts, "indexes": r.indexes, "page-tokens": r.pageTokens, "error-messages": r.errorMessages,
		"keys": r.keys, "batches": r.batches, "transactions": r.transactions, "ttl": r.ttl, "tags": r.tags, "streams": r.streams,
		"backups": r.backups, "exports": r.exports, "subscriptions": r.subscriptions, "aggregates": r.aggregates,
		"encryption": r.encryption, "admin-routes": r.adminRoutes, "sessions": r.sessions, "console": r.console,
		"environments": r.environments, "revocation": r.revocation, "suspension": r.suspension, "audit": r.audit,
	}
	for _, name := range Families {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("verify: interrupted: %w", err)
		}
		r.fam = r.fams[name]
		attacks[name](ctx)
		f := r.fams[name]
		rep.Families = append(rep.Families, *f)
		rep.Attempts += f.Attempts
		rep.Leaks += f.Leaks
		rep.Inconclusive += f.Inconclusive
		if f.Skipped != "" {
			rep.Skipped++
		}
		if o.Progress != nil {
			if f.Skipped != "" {
				fmt.Fprintf(o.Progress, "%-15s skipped: %s\n", name, f.Skipped)
			} else {
				fmt.Fprintf(o.Progress, "%-15s %4d attempts, %d leaks, %d inconclusive\n", name, f.Attempts, f.Leaks, f.Inconclusive)
			}
		}
	}
	return rep, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dynamo returns a DynamoDB client for c (with token, for temporary
// credentials) capturing through rec (nil: no capture).
func (r *run) dynamo(c Credential, token string, rec *recorder) *dynamodb.Client {
	var rt http.RoundTripper = r.o.Transport
	if rec != nil {
		rt = rec
	}
	return dynamodb.New(dynamodb.Options{
		Region:       r.o.Region,
		BaseEndpoint: aws.String(r.o.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: token}, nil
		}),
		HTTPClient:       &http.Client{Transport: rt, Timeout: time.Minute},
		RetryMaxAttempts: r.o.MaxAttempts,
	})
}

// api returns an admin API client for key capturing through rec.
func (r *run) api(key string, rec *recorder) *client.Client {
	return &client.Client{Endpoint: r.o.Endpoint, Key: key, HTTP: &http.Client{Transport: rec, Timeout: time.Minute}}
}

// try runs one attack of the current family by attacker rec: fn returns
// "" or what leaked; what rec captured leaked too.
func (r *run) try(ctx context.Context, rec *recorder, name string, fn func(ctx context.Context) string) {
	rec.take()
	finding := fn(ctx)
	found, failed := rec.take()
	// NB: an attack's own verdict on an attempt without an answer is
	// void (a network error is no refusal and no leak); what the
	// recorder found in the answers it got stands.
	if finding != "" && !failed {
		found = append([]string{finding}, found...)
	}
	r.fam.Attempts++
	if len(found) == 0 && failed {
		r.fam.Inconclusive++
	}
	if len(found) > 0 {
		r.fam.Leaks++
		for _, f := range found {
			if len(r.fam.Findings) < 50 {
				r.fam.Findings = append(r.fam.Findings, name+": "+f)
			}
		}
	}
}
