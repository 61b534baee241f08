//go:build !benchbypass

package node

import (
	"log/slog"

	"github.com/tenantdb/tenantdb/internal/server"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// benchOptions holds the benchmark-only options, none without the
// benchbypass tag (see benchbypass.go).
type benchOptions struct{}

func (benchOptions) keys(*tenantkey.Keyring, *slog.Logger) {}

func (benchOptions) wrap(a server.Authenticator, _ *tenancy.Guard, _ *slog.Logger) server.Authenticator {
	return a
}
