package main

// tenantdb tenant export / tenant import: a tenant's items out of and into
// the layout of DynamoDB's export to S3 (internal/dynexport), through the
// admin API's export stream and import batches.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// actorFor returns a client acting for tenant: c itself with a tenant's
// admin key, or, with the operator's key (which has no access to tenant
// data), a client signing with a short-lived admin session of the tenant
// that the operator mints (and the server audits).
func actorFor(ctx context.Context, cf *clientFlags, c *client.Client, tenant, env string) (*client.Client, error) {
	k, err := cf.apiKey()
	if err != nil {
		return nil, err
	}
	if !k.IsOperator() {
		return c, nil
	}
	s, err := c.CreateSession(ctx, tenant, client.SessionRequest{Role: "admin", Env: env, DurationSeconds: 12 * 3600})
	if err != nil {
		return nil, fmt.Errorf("minting an admin session of tenant %s: %w", tenant, err)
	}
	return &client.Client{Endpoint: c.Endpoint, HTTP: c.HTTP, Session: &s}, nil
}

// progress prints a line on w at most once a second (and when forced).
type progress struct {
	w    io.Writer
	last time.Time
}

func (p *progress) printf(force bool, format string, args ...any) {
	if now := time.Now(); force || now.Sub(p.last) >= time.Second {
		p.last = now
		fmt.Fprintf(p.w, format+"\n", args...)
	}
}

// exportedTable is one table in `tenant export`'s report.
type exportedTable struct {
	Table    string `json:"table"`
	Dir      string `json:"dir"`
	Items    int64  `json:"items"`
	Bytes    int64  `json:"bytes"`
	Files    int    `json:"files"`
	Checksum string `json:"checksum"` // MD5 of manifest-summary.json (its .checksum file)
}

func tenantExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant export", stderr, os.Getenv)
	var to, at, env string
	var tables multiFlag
	fs.StringVar(&to, "to", "", "directory to write the export into (one DynamoDB export per table under DIR/<table>/AWSDynamoDB/<id>/)")
	fs.Var(&tables, "table", "export only this table (repeatable; default: every table the tenant sees)")
	fs.StringVar(&at, "at", "", "export the state at this past time (RFC 3339); needs point-in-time history")
	fs.StringVar(&env, "env", tenancy.LiveEnv, "the tenant's environment to export, when acting with the operator's key")
	usageFunc(fs, stderr, "usage: tenantdb tenant export ID|SLUG --to DIR [--table NAME]... [--at RFC3339] [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "ID|SLUG"); err != nil {
		return err
	}
	if to == "" {
		return errors.New("--to DIR is required")
	}
	req := client.ExportRequest{Tables: tables}
	if at != "" {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return fmt.Errorf("--at: %w", err)
		}
		req.At = &t
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	actor, err := actorFor(ctx, cf, c, pos[0], env)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	var (
		report []exportedTable
		w      *dynexport.Writer
		cur    *exportedTable
		start  = time.Now()
		p      = &progress{w: stderr}
	)
	defer func() {
		if w != nil {
			w.Abort()
		}
	}()
	err = actor.Export(ctx, pos[0], req, func(ev client.ExportEvent) error {
		switch {
		case ev.Table != nil:
			var def dynexport.Definition
			if err := json.Unmarshal(ev.Table.Definition, &def); err != nil {
				return fmt.Errorf("the server sent a malformed definition of %s: %w", ev.Table.Name, err)
			}
			var err error
			w, err = dynexport.Create(filepath.Join(to, ev.Table.Name), dynexport.WriterOptions{
				ExportID: ev.Table.ExportID, ExportArn: ev.Table.ExportArn, TableArn: ev.Table.TableArn, TableID: ev.Table.TableID,
				Start: start, ExportTime: ev.Table.ExportTime, Definition: &def})
			if err != nil {
				return err
			}
			cur = &exportedTable{Table: ev.Table.Name, Dir: w.Dir()}
			p.printf(true, "export: %s: started (snapshot at %s)", cur.Table, ev.Table.ExportTime.UTC().Format(time.RFC3339Nano))
		case ev.Item != nil:
			if w == nil {
				return errors.New("the server sent an item outside a table")
			}
			cur.Items++
			cur.Bytes += ev.Size
			p.printf(false, "export: %s: %d items, %.1f MB", cur.Table, cur.Items, float64(cur.Bytes)/1e6)
			return w.Add(ev.Item, ev.Size)
		case ev.End != nil:
			if w == nil || ev.End.Items != cur.Items {
				return fmt.Errorf("the server ended table %s at %d items, %d received", ev.End.Name, ev.End.Items, cur.Items)
			}
			s, err := w.Close(time.Now())
			if err != nil {
				return err
			}
			w = nil
			sum, err := os.ReadFile(filepath.Join(cur.Dir, "manifest-summary.checksum"))
			if err != nil {
				return err
			}
			x, err := dynexport.Open(cur.Dir)
			if err != nil {
				return err
			}
			cur.Checksum, cur.Files = string(sum), len(x.Files)
			p.printf(true, "export: %s: done, %d items, %.1f MB in %d files, manifest checksum %s", cur.Table, s.ItemCount, float64(cur.Bytes)/1e6, cur.Files, cur.Checksum)
			report = append(report, *cur)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return cf.output(stdout, report, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "TABLE\tITEMS\tBYTES\tFILES\tCHECKSUM\tDIR")
		for _, r := range report {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", r.Table, r.Items, r.Bytes, r.Files, r.Checksum, r.Dir)
		}
	})
}

// importMarker is the durable progress of one export's import into one
// tenant, kept under the import's directory so that a rerun after a crash
// (of the CLI or the server) resumes after the last acknowledged batch.
type importMarker struct {
	Export   string             `json:"export"` // the export's directory
	Table    string             `json:"table"`
	Position dynexport.Position `json:"position"` // the next item to send
	Items    int64              `json:"items"`
	Bytes    int64              `json:"bytes"`
	Done     bool               `json:"done"`
}

func markerPath(from, tenant, exportDir string) string {
	h := sha256.Sum256([]byte(exportDir))
	return filepath.Join(from, ".tenantdb-import", tenant, hex.EncodeToString(h[:8])+".json")
}

func (m *importMarker) save(path string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func loadMarker(path string) (*importMarker, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m importMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// importedTable is one export in `tenant import`'s report.
type importedTable struct {
	Table        string `json:"table"`
	Export       string `json:"export"`
	Items        int64  `json:"items"`
	Bytes        int64  `json:"bytes"`
	Resumed      bool   `json:"resumed,omitempty"`
	Skipped      bool   `json:"skipped,omitempty"` // imported before (the marker says done)
	CreatedTable bool   `json:"created_table,omitempty"`
	DryRun       bool   `json:"dry_run,omitempty"`
}

// Import batches: at most this many items or bytes.
const (
	importBatchItems = 1000
	importBatchBytes = 4 << 20
)

func tenantImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant import", stderr, os.Getenv)
	var from, table, env string
	var dryRun, lift bool
	fs.StringVar(&from, "from", "", "directory holding one or more DynamoDB exports (made by tenantdb or by AWS)")
	fs.StringVar(&table, "table", "", "import only the export of this table, or, with a single export, into this table")
	fs.BoolVar(&dryRun, "dry-run", false, "read and check everything, write nothing")
	fs.BoolVar(&lift, "lift-quotas", false, "write without the tenant's admission quotas (writes are still metered; audited)")
	fs.StringVar(&env, "env", tenancy.LiveEnv, "the tenant's environment to import into, when acting with the operator's key")
	usageFunc(fs, stderr, "usage: tenantdb tenant import ID|SLUG --from DIR [--table NAME] [--dry-run] [--lift-quotas] [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "ID|SLUG"); err != nil {
		return err
	}
	if from == "" {
		return errors.New("--from DIR is required")
	}
	dirs, err := dynexport.Find(from)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no export (manifest-summary.json) under %s", from)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	actor, err := actorFor(ctx, cf, c, pos[0], env)
	if err != nil {
		return err
	}
	var report []importedTable
	p := &progress{w: stderr}
	for _, dir := range dirs {
		x, err := dynexport.Open(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		name := exportTable(x)
		switch {
		case table != "" && len(dirs) == 1:
			name = table
		case table != "" && name != table:
			continue
		}
		if name == "" {
			return fmt.Errorf("%s: the export names no table; give --table", dir)
		}
		r, err := importExport(ctx, actor, pos[0], from, dir, x, name, dryRun, lift, p)
		if err != nil {
			return fmt.Errorf("importing %s into %s: %w", dir, name, err)
		}
		report = append(report, r)
	}
	if len(report) == 0 {
		return fmt.Errorf("no export of table %s under %s", table, from)
	}
	return cf.output(stdout, report, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "TABLE\tITEMS\tBYTES\tSTATE\tEXPORT")
		for _, r := range report {
			state := "imported"
			switch {
			case r.DryRun:
				state = "checked (dry run)"
			case r.Skipped:
				state = "already imported"
			case r.Resumed:
				state = "imported (resumed)"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Table, r.Items, r.Bytes, state, r.Export)
		}
	})
}

// exportTable is the table an export holds: its definition's name, else
// the one in its table ARN.
func exportTable(x *dynexport.Export) string {
	if x.Definition != nil && x.Definition.TableName != "" {
		return x.Definition.TableName
	}
	if _, name, ok := strings.Cut(x.Summary.TableArn, ":table/"); ok {
		return name
	}
	return ""
}

func importExport(ctx context.Context, c *client.Client, tenant, from, dir string, x *dynexport.Export, table string, dryRun, lift bool, p *progress) (importedTable, error) {
	r := importedTable{Table: table, Export: dir, DryRun: dryRun}
	mpath := markerPath(from, tenant, dir)
	m := &importMarker{Export: dir, Table: table}
	if !dryRun {
		old, err := loadMarker(mpath)
		if err != nil {
			return r, err
		}
		if old != nil && old.Table == table {
			if old.Done {
				r.Items, r.Bytes, r.Skipped = old.Items, old.Bytes, true
				p.printf(true, "import: %s: already imported (%d items); remove %s to import again", table, old.Items, mpath)
				return r, nil
			}
			m, r.Resumed = old, true
			p.printf(true, "import: %s: resuming after %d items (file %d, line %d)", table, m.Items, m.Position.File, m.Position.Line)
		}
	}
	var def json.RawMessage
	if x.Definition != nil {
		d := *x.Definition
		d.TableName = table
		def, _ = json.Marshal(d)
	}
	req := client.ImportRequest{Table: table, Definition: def, DryRun: dryRun, LiftQuotas: lift, Begin: true, Source: x.Summary.ExportArn,
		Position: fmt.Sprintf("%d:%d", m.Position.File, m.Position.Line)}
	var size int
	var next dynexport.Position
	send := func() error {
		res, err := c.Import(ctx, tenant, req)
		if err != nil {
			return err
		}
		r.CreatedTable = r.CreatedTable || res.CreatedTable
		m.Items += int64(len(req.Items))
		m.Bytes += res.Bytes
		m.Position = next
		req.Items, req.Begin, req.Definition, size = req.Items[:0], false, nil, 0
		if !dryRun {
			if err := m.save(mpath); err != nil {
				return err
			}
		}
		p.printf(false, "import: %s: %d of %d items, %.1f MB", table, m.Items, x.Summary.ItemCount, float64(m.Bytes)/1e6)
		return nil
	}
	err := x.Scan(m.Position, func(pos dynexport.Position, item []byte) error {
		req.Items = append(req.Items, append(json.RawMessage(nil), item...))
		size += len(item)
		next = dynexport.Position{File: pos.File, Line: pos.Line + 1}
		if len(req.Items) >= importBatchItems || size >= importBatchBytes {
			return send()
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	req.Done = true
	if err := send(); err != nil {
		return r, err
	}
	m.Done = true
	if !dryRun {
		if err := m.save(mpath); err != nil {
			return r, err
		}
	}
	r.Items, r.Bytes = m.Items, m.Bytes
	p.printf(true, "import: %s: done, %d items, %.1f MB", table, m.Items, float64(m.Bytes)/1e6)
	return r, nil
}
