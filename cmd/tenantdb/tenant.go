package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "tenant",
	summary: "create, list, show, suspend, resume and delete tenants; move them between pool and silo; rotate their data keys",
	run:     runTenant,
})

func runTenant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("tenant", []verb{
		{"create", "create NAME [--slug SLUG] [--tier pool|silo] [--owner-sub SUB]", func(a []string, o, e io.Writer) error { return tenantCreate(ctx, a, o, e) }},
		{"list", "list", func(a []string, o, e io.Writer) error { return tenantList(ctx, a, o, e) }},
		{"show", "show ID|SLUG   (with where each table's data of the tenant lives)", func(a []string, o, e io.Writer) error { return tenantAction(ctx, "show", a, o, e) }},
		{"suspend", "suspend ID|SLUG", func(a []string, o, e io.Writer) error { return tenantAction(ctx, "suspend", a, o, e) }},
		{"resume", "resume ID|SLUG", func(a []string, o, e io.Writer) error { return tenantAction(ctx, "resume", a, o, e) }},
		{"delete", "delete ID|SLUG   (removes all of the tenant's data and keys)", func(a []string, o, e io.Writer) error { return tenantAction(ctx, "delete", a, o, e) }},
		{"export", "export ID|SLUG --to DIR [--table NAME]... [--at RFC3339]", func(a []string, o, e io.Writer) error { return tenantExport(ctx, a, o, e) }},
		{"import", "import ID|SLUG --from DIR [--table NAME] [--dry-run] [--lift-quotas]", func(a []string, o, e io.Writer) error { return tenantImport(ctx, a, o, e) }},
		{"restore", "restore ID|SLUG --to-time RFC3339 [--table NAME]...   (rewinds the tenant's items in place; undo by restoring to its undo_to)", func(a []string, o, e io.Writer) error { return tenantRestore(ctx, a, o, e) }},
		{"restore-status", "restore-status ID|SLUG   (the tenant's running or last in-place restore)", func(a []string, o, e io.Writer) error { return tenantRestoreStatus(ctx, a, o, e) }},
		{"move", "move ID|SLUG [--table NAME] --to silo|pool [--no-wait]   (moves the tenant's data online; prints progress)", func(a []string, o, e io.Writer) error { return tenantMove(ctx, a, o, e) }},
		{"moves", "moves ID|SLUG   (the tenant's moves and their progress)", func(a []string, o, e io.Writer) error { return tenantMoves(ctx, a, o, e) }},
		{"rotate-key", "rotate-key ID|SLUG [--no-wait]   (new data key; re-encrypts the tenant's data in the background)", func(a []string, o, e io.Writer) error { return tenantRotateKey(ctx, a, o, e) }},
		{"encryption", "encryption ID|SLUG   (the tenant's data key version and rotation progress)", func(a []string, o, e io.Writer) error { return tenantEncryption(ctx, a, o, e) }},
		{"shard", "shard ID|SLUG [--shards N] [--table NAME]   (remote backend: spread the tenant's items over N engine partition keys, online)", func(a []string, o, e io.Writer) error { return tenantShard(ctx, a, o, e) }},
	}, args, stdout, stderr)
}

func printTenants(w *tabwriter.Writer, ts []client.Tenant) {
	fmt.Fprintln(w, "ID\tNAME\tSLUG\tSTATUS\tTIER\tCREATED")
	for _, t := range ts {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Slug, t.Status, t.Tier, fmtTime(t.CreatedAt))
	}
}

func tenantCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant create", stderr, os.Getenv)
	var req client.CreateTenantRequest
	fs.StringVar(&req.Slug, "slug", "", "unique short name (default: derived from NAME)")
	fs.StringVar(&req.Tier, "tier", "", "pool (the default: the tenant's data shares the server's store) or silo (all of its data lives in a store of its own)")
	fs.StringVar(&req.OwnerSub, "owner-sub", "", "platform user (OIDC sub) who becomes the tenant's first member")
	fs.StringVar(&req.ID, "id", "", "use this tenant id (32 hex) instead of a random one")
	usageFunc(fs, stderr, "usage: tenantdb tenant create NAME [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "NAME"); err != nil {
		return err
	}
	req.Name = pos[0]
	c, err := cf.client()
	if err != nil {
		return err
	}
	t, err := c.CreateTenant(ctx, req)
	if err != nil {
		return err
	}
	return cf.output(stdout, t, func(w *tabwriter.Writer) { printTenants(w, []client.Tenant{t}) })
}

func tenantList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant list", stderr, os.Getenv)
	usageFunc(fs, stderr, "usage: tenantdb tenant list [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	ts, err := c.Tenants(ctx)
	if err != nil {
		return err
	}
	return cf.output(stdout, ts, func(w *tabwriter.Writer) { printTenants(w, ts) })
}

func tenantAction(ctx context.Context, action string, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant "+action, stderr, os.Getenv)
	usageFunc(fs, stderr, "usage: tenantdb tenant "+action+" ID|SLUG [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "a tenant ID or slug"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var t client.Tenant
	switch action {
	case "show":
		t, err = c.Tenant(ctx, pos[0])
	case "suspend":
		t, err = c.SuspendTenant(ctx, pos[0])
	case "resume":
		t, err = c.ResumeTenant(ctx, pos[0])
	case "delete":
		t, err = c.DeleteTenant(ctx, pos[0])
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, t, func(w *tabwriter.Writer) {
		printTenants(w, []client.Tenant{t})
		if len(t.Placement) > 0 {
			printPlacement(w, t.Placement)
		}
	})
}

// printPlacement prints where a tenant's data of each table lives.
func printPlacement(w *tabwriter.Writer, ps []client.TablePlacement) {
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "TABLE\tENV\tISOLATION\tSTORE\tPATH\tDATA")
	for _, p := range ps {
		env, path, data := p.Env, p.Path, "no"
		if env == "" {
			env = "(shared)"
		}
		if path == "" {
			path = "-"
		}
		if p.HasData {
			data = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Table, env, p.Isolation, p.Store, path, data)
	}
}
