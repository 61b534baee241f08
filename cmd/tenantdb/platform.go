package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "platform",
	summary: "platform users: list my tenants, invite, accept invitations, seed memberships",
	run:     runPlatform,
})

// PlatformConfig configures platform users' sign-in (OIDC ID tokens) for
// `tenantdb serve` (node.Platform). Without JWKS or HS256Secret the
// platform endpoints are off.
type PlatformConfig struct {
	// JWKS is a JWKS URL or file for RS256/ES256 tokens (TENANTDB_JWKS).
	JWKS string
	// HS256Secret enables HS256 tokens signed with it, for local
	// development only (TENANTDB_JWT_HS256_SECRET).
	HS256Secret string
	// Issuer and Audience, if set, must match the tokens' iss and aud
	// (TENANTDB_JWT_ISSUER, TENANTDB_JWT_AUDIENCE).
	Issuer, Audience string
}

func (c *PlatformConfig) applyEnv(getenv func(string) string) {
	for name, dst := range map[string]*string{
		"TENANTDB_JWKS": &c.JWKS, "TENANTDB_JWT_HS256_SECRET": &c.HS256Secret,
		"TENANTDB_JWT_ISSUER": &c.Issuer, "TENANTDB_JWT_AUDIENCE": &c.Audience,
	} {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
}

func (c *PlatformConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.JWKS, "jwks", c.JWKS, "JWKS URL or file for platform users' RS256/ES256 ID tokens (env TENANTDB_JWKS)")
	fs.StringVar(&c.HS256Secret, "jwt-hs256-secret", c.HS256Secret, "accept HS256 ID tokens signed with this secret; local development only (env TENANTDB_JWT_HS256_SECRET)")
	fs.StringVar(&c.Issuer, "jwt-issuer", c.Issuer, "required iss of ID tokens (env TENANTDB_JWT_ISSUER)")
	fs.StringVar(&c.Audience, "jwt-audience", c.Audience, "required aud of ID tokens (env TENANTDB_JWT_AUDIENCE)")
}

func runPlatform(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("platform", []verb{
		{"tenants", "tenants --token JWT        (the tenants of the token's user)", func(a []string, o, e io.Writer) error { return platformTenants(ctx, a, o, e) }},
		{"accept", "accept INVITE --token JWT", func(a []string, o, e io.Writer) error { return platformAccept(ctx, a, o, e) }},
		{"invite", "invite --tenant ID [--role read|app|admin] [--email E] [--ttl DURATION]", func(a []string, o, e io.Writer) error { return platformInvite(ctx, a, o, e) }},
		{"add-member", "add-member --tenant ID --sub SUB [--role admin|app|read]   (seeding; operator)", func(a []string, o, e io.Writer) error { return platformAddMember(ctx, a, o, e) }},
	}, args, stdout, stderr)
}

func printMemberships(w *tabwriter.Writer, ms []client.Membership) {
	fmt.Fprintln(w, "TENANT\tNAME\tSLUG\tSTATUS\tROLE\tVIA\tSINCE")
	for _, m := range ms {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.TenantID, dash(m.Name), dash(m.Slug), dash(m.Status), m.Role, m.Via, fmtTime(m.CreatedAt))
	}
}

func tokenFlag(fs *flag.FlagSet) *string {
	return fs.String("token", os.Getenv("TENANTDB_TOKEN"), "the platform user's OIDC ID token (env TENANTDB_TOKEN)")
}

func platformTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("platform tenants", stderr, os.Getenv)
	token := tokenFlag(fs)
	usageFunc(fs, stderr, "usage: tenantdb platform tenants --token JWT [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *token == "" {
		return fmt.Errorf("--token is required")
	}
	c := &client.Client{Endpoint: cf.endpoint, Token: *token}
	pt, err := c.PlatformTenants(ctx)
	if err != nil {
		return err
	}
	return cf.output(stdout, pt, func(w *tabwriter.Writer) { printMemberships(w, pt.Tenants) })
}

func platformAccept(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("platform accept", stderr, os.Getenv)
	token := tokenFlag(fs)
	usageFunc(fs, stderr, "usage: tenantdb platform accept INVITE --token JWT [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "the invitation token"); err != nil {
		return err
	}
	if *token == "" {
		return fmt.Errorf("--token is required")
	}
	c := &client.Client{Endpoint: cf.endpoint, Token: *token}
	m, err := c.AcceptInvite(ctx, pos[0])
	if err != nil {
		return err
	}
	return cf.output(stdout, m, func(w *tabwriter.Writer) { printMemberships(w, []client.Membership{m}) })
}

func platformInvite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("platform invite", stderr, os.Getenv)
	var tenant string
	var req client.InviteRequest
	var ttl time.Duration
	tenantFlag(fs, &tenant)
	fs.StringVar(&req.Role, "role", "read", "read, app or admin")
	fs.StringVar(&req.Email, "email", "", "whom the invitation is for (informational)")
	fs.DurationVar(&ttl, "ttl", 7*24*time.Hour, "how long the invitation is valid")
	usageFunc(fs, stderr, "usage: tenantdb platform invite --tenant ID [flags]")
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
	req.TTLSeconds = int(ttl / time.Second)
	c, err := cf.client()
	if err != nil {
		return err
	}
	inv, err := c.CreateInvite(ctx, tenant, req)
	if err != nil {
		return err
	}
	return cf.output(stdout, inv, func(w *tabwriter.Writer) {
		fmt.Fprintf(w, "tenant\t%s\nrole\t%s\nexpires\t%s\ntoken\t%s\n", inv.TenantID, inv.Role, fmtTime(inv.ExpiresAt), inv.Token)
		fmt.Fprintln(w, "\nThe token is shown only now; the invitee runs: tenantdb platform accept TOKEN --token <their ID token>")
	})
}

func platformAddMember(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("platform add-member", stderr, os.Getenv)
	var tenant string
	var req client.AddMemberRequest
	tenantFlag(fs, &tenant)
	fs.StringVar(&req.Sub, "sub", "", "the platform user's OIDC subject")
	fs.StringVar(&req.Role, "role", "admin", "admin, app or read")
	usageFunc(fs, stderr, "usage: tenantdb platform add-member --tenant ID --sub SUB [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if tenant == "" || req.Sub == "" {
		return fmt.Errorf("--tenant and --sub are required")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	m, err := c.AddMember(ctx, tenant, req)
	if err != nil {
		return err
	}
	return cf.output(stdout, m, func(w *tabwriter.Writer) { printMemberships(w, []client.Membership{m}) })
}
