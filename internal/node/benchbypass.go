//go:build benchbypass

package node

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/tenantdb/tenantdb/internal/server"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// benchOptions holds the benchmark-only options. They exist only in
// builds with the benchbypass tag (bench/tenancy.sh, BenchmarkServerBypass);
// the product binary cannot enable them.
type benchOptions struct {
	// BenchBypassTenancy skips signature verification after a
	// credential's first request and the guard's checks, to measure what
	// they cost (bypassAuth). INSECURE: it lets anyone who knows an access
	// key id use it.
	BenchBypassTenancy bool
	// BenchPlaintext stores the tenants' values unencrypted, to measure
	// what encryption costs (tenantkey.Keyring.BenchPlaintext).
	BenchPlaintext bool
}

func (o benchOptions) keys(kr *tenantkey.Keyring, log *slog.Logger) {
	if o.BenchPlaintext {
		log.Warn("BenchPlaintext: tenant data is stored unencrypted; benchmarks only")
		kr.BenchPlaintext()
	}
}

func (o benchOptions) wrap(a server.Authenticator, g *tenancy.Guard, log *slog.Logger) server.Authenticator {
	if !o.BenchBypassTenancy {
		return a
	}
	log.Warn("--bench-bypass-tenancy: signatures are not verified after a key's first request and tenancy checks are off; benchmarks only")
	tenancy.BypassChecks(g)
	return &bypassAuth{next: a}
}

// bypassAuth is the authenticator of BenchBypassTenancy, a benchmark-only
// mode that measures what authentication and isolation cost (issue 3:
// under 5% of throughput). A credential's first request is authenticated
// in full; afterwards its access key id alone is trusted and no signature
// is verified. With it the guard skips its role, policy and leading-key
// checks (tenancy.BypassChecks). The tenant still comes from the
// credential, so data stays in the tenant's key range and a run stores the
// same keys as a normal one. NB: anyone who knows an access key id can act
// as its key in this mode; it must never serve real clients.
type bypassAuth struct {
	next  server.Authenticator
	known sync.Map // access key id -> tenancy.Principal
}

func (b *bypassAuth) Authenticate(ctx context.Context, r *sigv4.Request) (tenancy.Principal, error) {
	akid, ok := accessKeyID(r.Header["Authorization"])
	if !ok {
		return b.next.Authenticate(ctx, r)
	}
	if p, ok := b.known.Load(akid); ok {
		return p.(tenancy.Principal), nil
	}
	p, err := b.next.Authenticate(ctx, r)
	if err == nil {
		b.known.Store(akid, p)
	}
	return p, err
}

// accessKeyID returns the access key id of a SigV4 Authorization header
// ("AWS4-HMAC-SHA256 Credential=<akid>/<date>/...").
func accessKeyID(h []string) (string, bool) {
	if len(h) != 1 {
		return "", false
	}
	_, rest, ok := strings.Cut(h[0], "Credential=")
	if !ok {
		return "", false
	}
	akid, _, ok := strings.Cut(rest, "/")
	return akid, ok && akid != ""
}
