package main

// Usage: `tenantdb usage` over GET /v1/tenants/{tenant}/usage
// (client.Client's Usage).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "usage",
	summary: "show a tenant's metered usage (capacity units, requests, throttles, storage)",
	run:     runUsage,
})

func runUsage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("usage", stderr, os.Getenv)
	tenant := fs.String("tenant", "", "tenant id (or, for the operator, slug)")
	from := fs.String("from", "", "start of the window, RFC 3339 (default: an hour before --to)")
	to := fs.String("to", "", "end of the window, RFC 3339 (default: now)")
	usageFunc(fs, stderr, "usage: tenantdb usage --tenant ID [--from RFC3339] [--to RFC3339] [flags]",
		"",
		"Consumed capacity units, requests and throttles in the hourly buckets that",
		"overlap the window (default: the last hour), and the tenant's current storage.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *tenant == "" {
		return errors.New("--tenant is required")
	}
	var window [2]time.Time
	for i, f := range []struct{ name, val string }{{"from", *from}, {"to", *to}} {
		if f.val == "" {
			continue
		}
		if window[i], err = time.Parse(time.RFC3339, f.val); err != nil {
			return fmt.Errorf("--%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", f.name)
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	r, err := c.Usage(ctx, *tenant, window[0], window[1])
	if err != nil {
		return err
	}
	return cf.output(stdout, r, func(w *tabwriter.Writer) { printUsage(w, &r) })
}

func printUsage(w *tabwriter.Writer, r *client.UsageReport) {
	fmt.Fprintf(w, "tenant %s, %s to %s\n", r.TenantID, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	fmt.Fprintf(w, "consumed: %g read units, %g write units; %d requests, %d throttled\n",
		r.ConsumedReadUnits, r.ConsumedWriteUnits, r.Requests, r.ThrottledRequests)
	fmt.Fprintf(w, "storage: %d items, %d bytes\n\n", r.Items, r.StorageBytes)
	tw := w
	fmt.Fprintln(tw, "OPERATION\tREQUESTS\tTHROTTLED\tREAD UNITS\tWRITE UNITS")
	ops := make([]string, 0, len(r.ByOperation))
	for op := range r.ByOperation {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		u := r.ByOperation[op]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%g\t%g\n", op, u.Requests, u.ThrottledRequests, u.ConsumedReadUnits, u.ConsumedWriteUnits)
	}
	if len(r.Storage) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "TABLE\tENV\tITEMS\tBYTES\tINDEX BYTES")
		for _, s := range r.Storage {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", s.Table, s.Env, s.Items, s.Bytes, s.IndexBytes)
		}
	}
}
