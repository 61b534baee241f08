// Package transfer moves a tenant's items out of and into tenantdb in the
// layout of DynamoDB's export to S3 (package dynexport): exports read a
// Source (a consistent snapshot of the tenant's tables, engine.Snapshot,
// or on a gateway the remote backend's reads of its collections); imports
// write through the ordinary write path (BatchWriteItem and CreateTable
// through the operation handler, with the caller's Scope), so isolation,
// leading-key checks, indexes, quotas and metering are exactly those of
// any request. An import can therefore never write outside the tenant's
// namespace, whatever its files contain.
//
// It serves the admin API's export stream and import batches
// (internal/admin) and DynamoDB's ExportTableToPointInTime, DescribeExport,
// ListExports, ImportTable, DescribeImport and ListImports over a local
// export root, where an S3 bucket is a directory of the calling tenant's
// own (jobs.go), with their job records in files there or, on a gateway
// fleet, in the control plane's store (kvrecords.go).
package transfer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Options configure a Service. Source and Handler are required.
type Options struct {
	// Source is what exports read, and what describes tables
	// (EngineSource for the embedded engine).
	Source Source
	// Handler runs the writes and DDL of imports: the server's handler,
	// with quota admission and metering.
	Handler dynamo.Handler
	// Unlimited runs them without the tenant's admission quotas (an
	// import with LiftQuotas); nil means Handler.
	Unlimited dynamo.Handler
	// Audit records exports and imports in the tenant's log; nil records
	// nothing.
	Audit *audit.Log
	// Root is the export root of the DynamoDB API's operations; "" turns
	// them off. NB: every gateway of a fleet must be given the same
	// shared directory (it stands for the S3 buckets).
	Root string
	// Control, when set, keeps the API's job records in the control
	// plane's store shared by a gateway fleet (kvrecords.go) instead of
	// files under Root, and another gateway takes over the jobs of one
	// whose lease lapsed; Owner names this gateway in its leases.
	Control Control
	Owner   string
	// Lease is how long a job's runner may go without renewing its
	// lease before another gateway takes the job over (0: 10 s); Sweep is
	// how often a gateway looks for such jobs (0: Lease/2).
	Lease, Sweep time.Duration
	// Region goes into ARNs; "" means us-east-1.
	Region string
	// Logger; nil discards.
	Logger *slog.Logger
	// Now; nil means time.Now.
	Now func() time.Time
}

// Service runs exports and imports.
type Service struct {
	o    Options
	log  *slog.Logger
	jobs *jobs
}

// New returns a Service. With a Root it also resumes the API's exports
// and imports that a restart interrupted (resume.go).
func New(o Options) (*Service, error) {
	if o.Source == nil || o.Handler == nil {
		return nil, errors.New("transfer: Source and Handler are required")
	}
	if o.Unlimited == nil {
		o.Unlimited = o.Handler
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{o: o, log: o.Logger}
	if o.Root != "" {
		var rec records
		var kr *kvRecords
		if o.Control != nil {
			if o.Lease <= 0 {
				o.Lease = 10 * time.Second
			}
			if o.Sweep <= 0 {
				o.Sweep = o.Lease / 2
			}
			kr = &kvRecords{st: o.Control, owner: o.Owner, lease: o.Lease, now: o.Now, log: o.Logger, running: map[string]bool{}}
			rec = kr
			s.o = o
		}
		j, err := openJobs(s, o.Root, rec)
		if err != nil {
			return nil, err
		}
		s.jobs = j
		if kr == nil {
			if err := j.resumeInterrupted(j.ctx); err != nil {
				return nil, err
			}
		} else {
			j.wg.Add(1)
			go j.sweep(o.Sweep)
		}
	}
	return s, nil
}

// Close waits for the API's running exports and imports to stop (they
// are cancelled).
func (s *Service) Close() {
	if s.jobs != nil {
		s.jobs.close()
	}
}

// dataScope refuses the operator, which has no access to tenant data.
func dataScope(sc tenancy.Scope) error {
	if sc.IsOperator() || sc.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "the operator credential has no access to tenant data: export and import with an admin key of the tenant (the tenantdb CLI mints a short-lived one when given the operator's)")
	}
	return nil
}

// record appends ev to sc's tenant's audit log.
func (s *Service) record(ctx context.Context, sc tenancy.Scope, ev audit.Event) {
	if s.o.Audit == nil {
		return
	}
	if ev.Actor == "" {
		ev.Actor, ev.Role = sc.KeyID(), sc.Role().String()
	}
	if _, err := s.o.Audit.Append(ctx, sc, ev); err != nil {
		s.log.Error("audit append failed", "action", ev.Action, "err", err)
	}
}
