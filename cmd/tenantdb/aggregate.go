package main

// `tenantdb aggregate`: aggregates maintained by the server from a table's
// change log, through the admin endpoints (client.Client's
// CreateAggregate, Aggregates, Aggregate, DeleteAggregate,
// RebuildAggregate).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "aggregate",
	summary: "define and read aggregates (counts and sums by group) the server keeps up to date",
	run:     runAggregate,
})

func runAggregate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("aggregate", []verb{
		{"create", "create (--tenant ID | --all-tenants) --table NAME --name AGG --group-by ATTR [--where EXPR] [--count] [--sum ATTR]... [--item ATTR=TEMPLATE]...",
			func(a []string, o, e io.Writer) error { return aggregateCreate(ctx, a, o, e) }},
		{"list", "list (--tenant ID | --all-tenants)", func(a []string, o, e io.Writer) error { return aggregateList(ctx, a, o, e) }},
		{"show", "show --tenant ID --name AGG", func(a []string, o, e io.Writer) error { return aggregateOne(ctx, "show", a, o, e) }},
		{"delete", "delete (--tenant ID | --all-tenants) --name AGG", func(a []string, o, e io.Writer) error { return aggregateOne(ctx, "delete", a, o, e) }},
		{"rebuild", "rebuild --tenant ID --name AGG", func(a []string, o, e io.Writer) error { return aggregateOne(ctx, "rebuild", a, o, e) }},
	}, args, stdout, stderr)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func aggregateCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("aggregate create", stderr, os.Getenv)
	tenant := fs.String("tenant", "", "tenant id (or, for the operator, slug)")
	all := fs.Bool("all-tenants", false, "operator: define it on a shared table for every tenant at once (each tenant's covers its own items)")
	table := fs.String("table", "", "the table to aggregate")
	name := fs.String("name", "", "the aggregate's name")
	groupBy := fs.String("group-by", "", "the attribute whose value names an item's group")
	where := fs.String("where", "", "a FilterExpression an item must satisfy to be counted")
	names := fs.String("names", "", "the where expression's ExpressionAttributeNames (JSON)")
	values := fs.String("values", "", "the where expression's ExpressionAttributeValues (DynamoDB JSON)")
	count := fs.Bool("count", false, "count the items of each group")
	var sums, items listFlag
	fs.Var(&sums, "sum", "sum this number attribute per group (repeatable)")
	after := fs.String("group-after", "", "group string values by their part after the last occurrence of this separator (\"|\": TENANT#1|OPEN groups as OPEN)")
	fs.Var(&items, "item", "materialise each group as an item: ATTR=TEMPLATE for each key attribute, {group} and {tenant} in TEMPLATE (repeatable)")
	usageFunc(fs, stderr, "usage: tenantdb aggregate create --tenant ID --table NAME --name AGG --group-by ATTR [--where EXPR] [--count] [--sum ATTR]... [flags]",
		"",
		"The server keeps the aggregate up to date from the table's change log, exactly",
		"once, with exact decimal sums; it first computes it from the table's items.",
		"With --item, each group is also written as an item of the table, e.g.",
		"  --item 'pk=TENANT#{tenant}|AGGREGATE' --item 'sk=STATUS#{group}'",
		"holding \"count\" and \"sum_<attr>\".")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if (*tenant == "") == !*all || *table == "" || *name == "" || *groupBy == "" {
		return errors.New("--table, --name, --group-by and one of --tenant and --all-tenants are required")
	}
	in := client.CreateAggregateRequest{Name: *name, Table: *table, GroupBy: *groupBy, Where: *where, Count: *count, Sum: sums, GroupAfter: *after}
	if *names != "" {
		if err := json.Unmarshal([]byte(*names), &in.Names); err != nil {
			return fmt.Errorf("--names: %w", err)
		}
	}
	if *values != "" {
		if err := json.Unmarshal([]byte(*values), &in.Values); err != nil {
			return fmt.Errorf("--values: %w", err)
		}
	}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return fmt.Errorf("--item %q: want ATTR=TEMPLATE", it)
		}
		if in.Item == nil {
			in.Item = map[string]string{}
		}
		if _, dup := in.Item[k]; dup {
			return fmt.Errorf("--item names %s twice", k)
		}
		in.Item[k] = v
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out client.Aggregate
	if *all {
		out, err = c.CreateFleetAggregate(ctx, in)
	} else {
		out, err = c.CreateAggregate(ctx, *tenant, in)
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) { printAggregates(w, []client.Aggregate{out}) })
}

func aggregateList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("aggregate list", stderr, os.Getenv)
	tenant := fs.String("tenant", "", "tenant id (or, for the operator, slug)")
	all := fs.Bool("all-tenants", false, "operator: the aggregates defined for every tenant")
	usageFunc(fs, stderr, "usage: tenantdb aggregate list (--tenant ID | --all-tenants) [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if (*tenant == "") == !*all {
		return errors.New("one of --tenant and --all-tenants is required")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out []client.Aggregate
	if *all {
		out, err = c.FleetAggregates(ctx)
	} else {
		out, err = c.Aggregates(ctx, *tenant)
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, client.AggregateList{Aggregates: out}, func(w *tabwriter.Writer) { printAggregates(w, out) })
}

func aggregateOne(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("aggregate "+verb, stderr, os.Getenv)
	tenant := fs.String("tenant", "", "tenant id (or, for the operator, slug)")
	name := fs.String("name", "", "the aggregate's name (or give it as the argument)")
	var all *bool
	if verb == "delete" {
		all = fs.Bool("all-tenants", false, "operator: delete an aggregate defined for every tenant, and every tenant's copy")
	} else {
		all = new(bool)
	}
	usageFunc(fs, stderr, "usage: tenantdb aggregate "+verb+" --tenant ID --name AGG [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *name == "" && len(pos) == 1 {
		*name, pos = pos[0], nil
	}
	if err := needArgs(pos, 0, "the name in --name or as the one argument"); err != nil {
		return err
	}
	if (*tenant == "") == !*all || *name == "" {
		return errors.New("--name and --tenant (or, for delete, --all-tenants) are required")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out client.Aggregate
	switch verb {
	case "show":
		out, err = c.Aggregate(ctx, *tenant, *name)
	case "rebuild":
		out, err = c.RebuildAggregate(ctx, *tenant, *name)
	case "delete":
		if *all {
			err = c.DeleteFleetAggregate(ctx, *name)
		} else {
			err = c.DeleteAggregate(ctx, *tenant, *name)
		}
		if err != nil {
			return err
		}
		return cf.output(stdout, map[string]string{"name": *name, "status": "deleted"}, func(w *tabwriter.Writer) {
			fmt.Fprintf(w, "aggregate %s deleted\n", *name)
		})
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) {
		printAggregates(w, []client.Aggregate{out})
		if verb == "show" {
			fmt.Fprintln(w)
			printGroups(w, out)
		}
	})
}

func printAggregates(w *tabwriter.Writer, as []client.Aggregate) {
	fmt.Fprintln(w, "NAME\tTABLE\tGROUP BY\tSTATE\tLAG MS\tAPPLIED\tREBUILDS\tCREATED\tERROR")
	for _, a := range as {
		e := a.Error
		if e == "" {
			e = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", a.Name, a.Table, a.GroupBy, a.State, a.LagMillis, a.Applied, a.Rebuilds, fmtTime(a.CreatedAt), e)
	}
}

func printGroups(w *tabwriter.Writer, a client.Aggregate) {
	hdr := "GROUP"
	if a.Count {
		hdr += "\tCOUNT"
	}
	for _, s := range a.Sum {
		hdr += "\tSUM(" + s + ")"
	}
	fmt.Fprintln(w, hdr)
	keys := make([]string, 0, len(a.Groups))
	for k := range a.Groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := a.Groups[k]
		row := k
		if a.Count && g.Count != nil {
			row += fmt.Sprintf("\t%d", *g.Count)
		}
		for _, s := range a.Sum {
			row += "\t" + g.Sum[s]
		}
		fmt.Fprintln(w, row)
	}
}
