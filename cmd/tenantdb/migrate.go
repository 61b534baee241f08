package main

// tenantdb migrate: load a DynamoDB export of a table in which the
// application embedded its own tenant ids in a key attribute into one
// tenantdb tenant per id (seed 003's migration, with a dry run).

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
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/transfer"
)

var _ = register(&command{
	name:    "migrate",
	summary: "load an export of a table with tenant ids in its keys into one tenant per id",
	run:     runMigrate,
})

// tenantRule is --tenant-from ATTR:PREFIX{tenant}SEP*: the tenant id of an
// item is what follows PREFIX in ATTR's string value, up to SEP.
type tenantRule struct {
	attr, prefix, sep string
}

func parseTenantRule(s string) (tenantRule, error) {
	name, pattern, ok := strings.Cut(s, ":")
	before, after, ok2 := strings.Cut(pattern, "{tenant}")
	sep, star := strings.CutSuffix(after, "*")
	if !ok || name == "" || !ok2 || !star || sep == "" || strings.Contains(sep, "{tenant}") || strings.Contains(before, "*") {
		return tenantRule{}, fmt.Errorf("--tenant-from %q: want ATTR:PREFIX{tenant}SEP*, e.g. 'pk:TENANT#{tenant}|*'", s)
	}
	return tenantRule{attr: name, prefix: before, sep: sep}, nil
}

// id returns the tenant id embedded in item, if any.
func (r tenantRule) id(item attr.Item) (string, bool) {
	v, ok := item[r.attr]
	if !ok || v.Type != attr.S {
		return "", false
	}
	rest, ok := strings.CutPrefix(v.S, r.prefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, r.sep)
	return id, ok && id != ""
}

// migrateTenant is one embedded tenant id in migrate's report.
type migrateTenant struct {
	ID       string `json:"id"`   // the id embedded in the keys
	Slug     string `json:"slug"` // the tenantdb tenant's slug
	TenantID string `json:"tenant_id,omitempty"`
	Exists   bool   `json:"exists"`
	Created  bool   `json:"created,omitempty"`
	Items    int64  `json:"items"`
	Bytes    int64  `json:"bytes"`
}

// unmatchedItem is an item whose key carries no tenant id.
type unmatchedItem struct {
	File int             `json:"file"`
	Line int64           `json:"line"`
	Key  json.RawMessage `json:"key"`
}

type migrateReport struct {
	Table     string          `json:"table"`
	Isolation string          `json:"isolation"`
	DryRun    bool            `json:"dry_run"`
	Tenants   []migrateTenant `json:"tenants"`
	Unmatched []unmatchedItem `json:"unmatched"`
	Items     int64           `json:"items"`
}

// targetTable is what migrate needs of the destination table.
type targetTable struct {
	isolation, pattern string
	keys               []string // the table's key attributes
	gsiKeys            []string // key attributes of its GSIs
}

func describeTarget(ctx context.Context, dc *dynamoCaller, name string) (targetTable, error) {
	var dt struct {
		Table struct {
			TableArn  string
			KeySchema []struct{ AttributeName string }
			GSIs      []struct {
				KeySchema []struct{ AttributeName string }
			} `json:"GlobalSecondaryIndexes"`
		}
	}
	if err := dc.Call(ctx, "DescribeTable", map[string]string{"TableName": name}, &dt); err != nil {
		return targetTable{}, err
	}
	tt := targetTable{isolation: "namespace"}
	for _, k := range dt.Table.KeySchema {
		tt.keys = append(tt.keys, k.AttributeName)
	}
	for _, g := range dt.Table.GSIs {
		for _, k := range g.KeySchema {
			tt.gsiKeys = append(tt.gsiKeys, k.AttributeName)
		}
	}
	var tags struct{ Tags []struct{ Key, Value string } }
	if err := dc.Call(ctx, "ListTagsOfResource", map[string]string{"ResourceArn": dt.Table.TableArn}, &tags); err != nil {
		return targetTable{}, err
	}
	for _, t := range tags.Tags {
		switch t.Key {
		case "tenantdb:isolation":
			tt.isolation = t.Value
		case "tenantdb:leading-key-pattern":
			tt.pattern = t.Value
		}
	}
	if tt.isolation == "leading-keys" && tt.pattern == "" {
		tt.pattern = "TENANT#{tenant}|*" // NB: resolve's default pattern
	}
	return tt, nil
}

// rewrite applies the migration's key rule to item of tenant id (tenantdb
// tenant tid): the embedded prefix PREFIX<id>SEP of the tenant attribute
// and of every GSI key attribute carrying it is removed (namespace and
// silo tables, where the server keeps tenants apart) or replaced by the
// table's leading-key prefix for tid (leading-keys tables).
func (tt targetTable) rewrite(r tenantRule, item attr.Item, id, tid string) attr.Item {
	old := r.prefix + id + r.sep
	repl := ""
	if tt.isolation == "leading-keys" {
		repl, _, _ = strings.Cut(strings.ReplaceAll(tt.pattern, "{tenant}", tid), "*")
	}
	names := append([]string{r.attr}, tt.gsiKeys...)
	for _, n := range names {
		if v, ok := item[n]; ok && v.Type == attr.S && strings.HasPrefix(v.S, old) {
			item[n] = attr.Str(repl + strings.TrimPrefix(v.S, old))
		}
	}
	return item
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("migrate", stderr, os.Getenv)
	var from, table, rule, slugT, env string
	var create, dryRun bool
	fs.StringVar(&from, "from", "", "directory holding the DynamoDB export of the table (made by AWS or by tenantdb)")
	fs.StringVar(&table, "table", "", "the tenantdb table to load (a shared table the operator created)")
	fs.StringVar(&rule, "tenant-from", "", "where the tenant id is: ATTR:PREFIX{tenant}SEP*, e.g. 'pk:TENANT#{tenant}|*'")
	fs.BoolVar(&create, "create-tenants", false, "create a tenant for each id that has none")
	fs.BoolVar(&dryRun, "dry-run", false, "print per-tenant item counts, bytes and every unmatched item; change nothing")
	fs.StringVar(&slugT, "slug", "{tenant}", "the slug of the tenant of an embedded id ({tenant} is the id)")
	fs.StringVar(&env, "env", tenancy.LiveEnv, "the tenants' environment to load into")
	usageFunc(fs, stderr, "usage: tenantdb migrate --from DIR --table NAME --tenant-from 'pk:TENANT#{tenant}|*' [--create-tenants] [--dry-run] [--json] [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if from == "" || table == "" || rule == "" {
		return errors.New("--from, --table and --tenant-from are required")
	}
	r, err := parseTenantRule(rule)
	if err != nil {
		return err
	}
	k, err := cf.apiKey()
	if err != nil {
		return err
	}
	if !k.IsOperator() {
		return errors.New("migrate maps ids to tenants and may create them: run it with the operator's key")
	}
	x, err := findExport(from, table)
	if err != nil {
		return err
	}
	dc, err := cf.dynamoCaller("", "us-east-1")
	if err != nil {
		return err
	}
	tt, err := describeTarget(ctx, dc, table)
	if err != nil {
		return fmt.Errorf("table %s: %w", table, err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	rep := &migrateReport{Table: table, Isolation: tt.isolation, DryRun: dryRun, Unmatched: []unmatchedItem{}}
	byID := map[string]*migrateTenant{}
	p := &progress{w: stderr}

	// Pass 1: who owns what. It changes nothing.
	err = x.Scan(dynexport.Position{}, func(pos dynexport.Position, raw []byte) error {
		item, err := attr.ParseItemJSON(raw)
		if err != nil {
			return fmt.Errorf("file %d line %d: %w", pos.File, pos.Line+1, err)
		}
		rep.Items++
		id, ok := r.id(item)
		if !ok {
			key := attr.Item{}
			for _, n := range tt.keys {
				if v, ok := item[n]; ok {
					key[n] = v
				}
			}
			rep.Unmatched = append(rep.Unmatched, unmatchedItem{File: pos.File, Line: pos.Line, Key: transfer.AppendItem(nil, key)})
			return nil
		}
		mt := byID[id]
		if mt == nil {
			mt = &migrateTenant{ID: id, Slug: strings.ReplaceAll(slugT, "{tenant}", strings.ToLower(id))}
			byID[id] = mt
		}
		mt.Items++
		mt.Bytes += int64(attr.ItemSize(item))
		p.printf(false, "migrate: read %d items", rep.Items)
		return nil
	})
	if err != nil {
		return err
	}
	tenants, err := c.Tenants(ctx)
	if err != nil {
		return err
	}
	bySlug := map[string]client.Tenant{}
	for _, t := range tenants {
		bySlug[t.Slug] = t
	}
	var missing []string
	for _, mt := range byID {
		if t, ok := bySlug[mt.Slug]; ok {
			mt.TenantID, mt.Exists = t.ID, true
		} else {
			missing = append(missing, mt.Slug)
		}
		rep.Tenants = append(rep.Tenants, *mt)
	}
	sort.Slice(rep.Tenants, func(i, j int) bool { return rep.Tenants[i].ID < rep.Tenants[j].ID })
	sort.Strings(missing)
	if !dryRun {
		if len(missing) > 0 && !create {
			return fmt.Errorf("no tenant has the slug %s; create them or pass --create-tenants (nothing was changed)", strings.Join(missing, ", "))
		}
		if err := migrateLoad(ctx, cf, c, x, r, tt, rep, byID, env, p); err != nil {
			return err
		}
	}
	return cf.output(stdout, rep, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "ID\tSLUG\tTENANT\tITEMS\tBYTES\tSTATE")
		for _, t := range rep.Tenants {
			state := "exists"
			switch {
			case t.Created:
				state = "created"
			case !t.Exists && dryRun:
				state = "missing (--create-tenants creates it)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", t.ID, t.Slug, t.TenantID, t.Items, t.Bytes, state)
		}
		fmt.Fprintf(tw, "unmatched items: %d\n", len(rep.Unmatched))
		for _, u := range rep.Unmatched {
			fmt.Fprintf(tw, "  file %d line %d: %s\n", u.File, u.Line+1, u.Key)
		}
	})
}

// findExport returns the export of table under dir (or the only one).
func findExport(dir, table string) (*dynexport.Export, error) {
	dirs, err := dynexport.Find(dir)
	if err != nil {
		return nil, err
	}
	var found []*dynexport.Export
	for _, d := range dirs {
		x, err := dynexport.Open(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		if len(dirs) == 1 || exportTable(x) == table {
			found = append(found, x)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("want one export of table %s under %s, found %d", table, dir, len(found))
	}
	return found[0], nil
}

// migrateLoad creates the missing tenants and writes every matched item,
// rewritten, into its tenant through an admin session of that tenant.
func migrateLoad(ctx context.Context, cf *clientFlags, c *client.Client, x *dynexport.Export, r tenantRule, tt targetTable,
	rep *migrateReport, byID map[string]*migrateTenant, env string, p *progress) error {
	for i := range rep.Tenants {
		mt := &rep.Tenants[i]
		if !mt.Exists {
			t, err := c.CreateTenant(ctx, client.CreateTenantRequest{Name: mt.Slug, Slug: mt.Slug})
			if err != nil {
				return fmt.Errorf("creating tenant %s: %w", mt.Slug, err)
			}
			mt.TenantID, mt.Created = t.ID, true
		}
		byID[mt.ID] = mt
	}
	type sink struct {
		actor *client.Client
		req   client.ImportRequest
		size  int
	}
	sinks := map[string]*sink{}
	flush := func(mt *migrateTenant, k *sink) error {
		if _, err := k.actor.Import(ctx, mt.TenantID, k.req); err != nil {
			return fmt.Errorf("tenant %s: %w", mt.Slug, err)
		}
		k.req.Items, k.req.Begin, k.size = k.req.Items[:0], false, 0
		return nil
	}
	var written int64
	err := x.Scan(dynexport.Position{}, func(pos dynexport.Position, raw []byte) error {
		item, err := attr.ParseItemJSON(raw)
		if err != nil {
			return err
		}
		id, ok := r.id(item)
		if !ok {
			return nil
		}
		mt := byID[id]
		k := sinks[id]
		if k == nil {
			actor, err := actorFor(ctx, cf, c, mt.TenantID, env)
			if err != nil {
				return err
			}
			k = &sink{actor: actor, req: client.ImportRequest{Table: rep.Table, Begin: true, Source: "migrate " + x.Summary.ExportArn}}
			sinks[id] = k
		}
		b := transfer.AppendItem(nil, tt.rewrite(r, item, id, mt.TenantID))
		k.req.Items = append(k.req.Items, b)
		k.size += len(b)
		written++
		p.printf(false, "migrate: wrote %d of %d items", written, rep.Items)
		if len(k.req.Items) >= importBatchItems || k.size >= importBatchBytes {
			return flush(mt, k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, k := range sinks {
		k.req.Done = true
		if err := flush(byID[id], k); err != nil {
			return err
		}
	}
	p.printf(true, "migrate: wrote %d items into %d tenants; %d unmatched items left out", written, len(sinks), len(rep.Unmatched))
	return nil
}
