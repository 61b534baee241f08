package main

// `tenantdb quota`: shows and sets quotas through the admin endpoints
// (client.Client's Quota and SetQuota).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "quota",
	summary: "show or set a tenant's capacity quota",
	run:     runQuota,
})

func runQuota(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("quota", []verb{
		{"show", "show --tenant ID [--table NAME]", func(a []string, o, e io.Writer) error { return quotaCmd(ctx, false, a, o, e) }},
		{"set", "set --tenant ID [--table NAME] [--read-units N] [--write-units N] [--burst-seconds S] [--weight W] [--max-inflight N]",
			func(a []string, o, e io.Writer) error { return quotaCmd(ctx, true, a, o, e) }},
	}, args, stdout, stderr)
}

func quotaCmd(ctx context.Context, set bool, args []string, stdout, stderr io.Writer) error {
	name := "quota show"
	if set {
		name = "quota set"
	}
	fs, cf := newClientFlagSet(name, stderr, os.Getenv)
	tenant := fs.String("tenant", "", "tenant id (or, for the operator, slug)")
	table := fs.String("table", "", "a table's quota instead of the tenant's")
	var rd, wr, burst, weight optFloat
	var inflight optInt
	if set {
		fs.Var(&rd, "read-units", "read capacity units per second")
		fs.Var(&wr, "write-units", "write capacity units per second")
		fs.Var(&burst, "burst-seconds", "seconds of unused capacity kept as burst credit (default 300, as DynamoDB)")
		fs.Var(&weight, "weight", "share in fair queueing when the server is saturated (tenant only; default 1)")
		fs.Var(&inflight, "max-inflight", "requests of the tenant that may run at once (tenant only)")
		usageFunc(fs, stderr, "usage: tenantdb quota set --tenant ID [--table NAME] [--read-units N] [--write-units N] [flags]",
			"",
			"Capacity is in DynamoDB read and write capacity units per second. A value of",
			"0 removes a setting (back to the server default; for a table, back to only",
			"the tenant's limit). Settings not given keep their current value.")
	} else {
		usageFunc(fs, stderr, "usage: tenantdb quota show --tenant ID [--table NAME] [flags]")
	}
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
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out client.Quota
	if set {
		u := client.QuotaUpdate{ReadUnits: rd.p, WriteUnits: wr.p, BurstSeconds: burst.p, Weight: weight.p, MaxInflight: inflight.p}
		if u == (client.QuotaUpdate{}) {
			return errors.New("nothing to set: give at least one of --read-units, --write-units, --burst-seconds, --weight, --max-inflight")
		}
		out, err = c.SetQuota(ctx, *tenant, *table, u)
	} else {
		out, err = c.Quota(ctx, *tenant, *table)
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) { printQuota(w, &out) })
}

func printQuota(tw *tabwriter.Writer, q *client.Quota) {
	fmt.Fprintln(tw, "TENANT\tTABLE\tREAD UNITS/S\tWRITE UNITS/S\tBURST S\tWEIGHT\tMAX INFLIGHT\tSET\tAVAILABLE R/W")
	row := func(q *client.Quota) {
		table, weight, inflight, avail := "(all)", "-", "-", "-"
		if q.Table != "" {
			table = q.Table
		} else {
			weight, inflight = fmt.Sprint(q.Weight), fmt.Sprint(q.MaxInflight)
		}
		if q.Available != nil {
			avail = fmt.Sprintf("%.1f/%.1f", q.Available.ReadUnits, q.Available.WriteUnits)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%g\t%s\t%s\t%v\t%s\n", q.TenantID, table, units(q.ReadUnits), units(q.WriteUnits),
			q.BurstSeconds, weight, inflight, q.Set, avail)
	}
	row(q)
	for i := range q.Tables {
		row(&q.Tables[i])
	}
}

func units(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprint(v)
}

// optFloat and optInt are flags that remember whether they were given.
type optFloat struct{ p *float64 }

func (o *optFloat) String() string {
	if o == nil || o.p == nil {
		return ""
	}
	return fmt.Sprint(*o.p)
}

func (o *optFloat) Set(s string) error {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	o.p = &v
	return nil
}

type optInt struct{ p *int }

func (o *optInt) String() string {
	if o == nil || o.p == nil {
		return ""
	}
	return fmt.Sprint(*o.p)
}

func (o *optInt) Set(s string) error {
	var v int
	if _, err := fmt.Sscan(s, &v); err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	o.p = &v
	return nil
}
