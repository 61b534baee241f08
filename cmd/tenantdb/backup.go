package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/backup"
	"github.com/tenantdb/tenantdb/internal/node"
)

var _ = register(&command{
	name:    "backup",
	summary: "back up the whole server online (create), restore a backup into a new data directory, list and verify backups",
	run:     runBackup,
})

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("backup", []verb{
		{"create", "create --to DIR          (the server writes a backup into the repository DIR on its machine; incremental after the first)", func(a []string, o, e io.Writer) error { return backupCreate(ctx, a, o, e) }},
		{"restore", "restore --from DIR --data-dir NEW [--backup ID] [--server-key-file FILE]   (offline; verifies every file first)", func(a []string, o, e io.Writer) error { return backupRestore(a, o, e) }},
		{"list", "list --from DIR", func(a []string, o, e io.Writer) error { return backupList(a, o, e) }},
		{"verify", "verify --from DIR [--backup ID]   (reads every file and checks its SHA-256)", func(a []string, o, e io.Writer) error { return backupVerify(a, o, e) }},
		{"prune", "prune --from DIR --keep N   (deletes all but the newest N backups and the files only they used)", func(a []string, o, e io.Writer) error { return backupPrune(a, o, e) }},
	}, args, stdout, stderr)
}

func backupCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("backup create", stderr, os.Getenv)
	to := fs.String("to", "", "the backup repository: a directory on the server's machine (a relative path is made absolute here)")
	quiet := fs.Bool("quiet", false, "print no progress")
	maxRate := fs.Float64("max-rate", float64(backup.DefaultMaxRate)/(1<<20), "MiB per second the server reads, hashes and copies its files at, leaving the disk and cores to its writers; 0 = no limit")
	usageFunc(fs, stderr, "usage: tenantdb backup create --to DIR [flags]",
		"",
		"The server copies, as of one moment and while it keeps serving, its main store,",
		"every silo store and the tenants' data keys into DIR. Files DIR already holds",
		"are not copied again. The server key is not in the backup: keep it apart.",
		"The copy is limited to --max-rate MiB/s so that writers keep their pace.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("--to is required")
	}
	if *maxRate < 0 {
		return fmt.Errorf("--max-rate must be a number of MiB per second, 0 for no limit; got %v", *maxRate)
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	phase := ""
	done, err := c.Backup(ctx, client.BackupRequest{To: dir, MaxRate: maxRate}, func(p client.BackupProgress) {
		if *quiet {
			return
		}
		switch {
		case p.Phase == "checkpoint":
			fmt.Fprintln(stderr, "checkpoint: copying the stores and keys as of now")
		case p.Phase == "copy" && phase != "copy":
			fmt.Fprintf(stderr, "copy: %d files, %s\n", p.Files, human(p.Bytes))
		case p.Phase == "copy":
			fmt.Fprintf(stderr, "copy: %d/%d files, %s/%s checked, %d new (%s)\n", p.Done, p.Files, human(p.DoneBytes), human(p.Bytes), p.Copied, human(p.CopiedBytes))
		}
		phase = p.Phase
	})
	if err != nil {
		return err
	}
	return cf.output(stdout, done, func(w *tabwriter.Writer) {
		kind := "full"
		if done.Base != "" {
			kind = "incremental on " + done.Base
		}
		fmt.Fprintln(w, "BACKUP\tKIND\tFILES\tBYTES\tNEW FILES\tNEW BYTES\tTENANT KEYS\tSERVER KEY\tSECONDS")
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%.1f\n", done.ID, kind, done.Files, done.Bytes, done.Copied, done.CopiedBytes, done.Tenants, done.ServerKeyCheck, done.Seconds)
	})
}

// restoreResult is what backup restore prints.
type restoreResult struct {
	Backup   string   `json:"backup"`
	DataDir  string   `json:"data_dir"`
	Files    int      `json:"files"`
	Bytes    int64    `json:"bytes"`
	Shredded []string `json:"shredded,omitempty"`
	// ServerKeyInstalled says whether server.key was written into the
	// data directory (--server-key-file) or must be given to the server.
	ServerKeyInstalled bool `json:"server_key_installed"`
}

func backupRestore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup repository")
	dataDir := fs.String("data-dir", "", "the new data directory (missing or empty)")
	id := fs.String("backup", "", "the backup to restore (default: the latest)")
	keyFile := fs.String("server-key-file", "", "the server key (a server.key file) to install in the new data directory; without it the key comes from "+auth.ServerKeyEnv+", and the server must be started with it")
	asJSON := fs.Bool("json", false, "print JSON")
	usageFunc(fs, stderr, "usage: tenantdb backup restore --from DIR --data-dir NEW [flags]",
		"",
		"Offline: run it where the new server will run, then start `tenantdb serve --data-dir NEW`.",
		"Every file is checked against its SHA-256 before anything is written.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *from == "" || *dataDir == "" {
		return errors.New("--from and --data-dir are required")
	}
	var material string
	var install []byte
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		material, install = strings.TrimSpace(string(b)), b
	} else if material = os.Getenv(auth.ServerKeyEnv); material == "" {
		return fmt.Errorf("the server key is not in the backup: give it with --server-key-file or %s", auth.ServerKeyEnv)
	}
	key, _, err := auth.LoadServerKey("", material)
	if err != nil {
		return fmt.Errorf("the server key: %w", err)
	}
	r, err := backup.OpenRepo(*from)
	if err != nil {
		return err
	}
	last := time.Now()
	res, err := r.Restore(backup.RestoreOptions{Backup: *id, DataDir: *dataDir, ServerKeyCheck: node.ServerKeyCheck(key.Check()), ServerKey: install,
		Progress: func(phase string, done, total int64) {
			if time.Since(last) > time.Second || done == total {
				last = time.Now()
				fmt.Fprintf(stderr, "%s: %s/%s\n", phase, human(done), human(total))
			}
		}})
	if err != nil {
		for _, p := range res.Problems {
			fmt.Fprintln(stderr, p)
		}
		return err
	}
	out := restoreResult{Backup: res.Backup, DataDir: *dataDir, Files: res.Files, Bytes: res.Bytes, Shredded: res.Shredded, ServerKeyInstalled: install != nil}
	for _, t := range res.Shredded {
		fmt.Fprintf(stderr, "tenant %s: its data key was destroyed (the tenant was deleted after this backup); its data cannot be restored and stays unreadable\n", t)
	}
	if install == nil {
		fmt.Fprintf(stderr, "start the server with %s set to the same key\n", auth.ServerKeyEnv)
	}
	cf := clientFlags{json: *asJSON}
	return cf.output(stdout, out, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "BACKUP\tDATA DIR\tFILES\tBYTES\tSHREDDED TENANTS")
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\n", out.Backup, out.DataDir, out.Files, out.Bytes, len(out.Shredded))
	})
}

func backupList(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup repository")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" {
		return errors.New("--from is required")
	}
	r, err := backup.OpenRepo(*from)
	if err != nil {
		return err
	}
	ms, err := r.Backups()
	if err != nil {
		return err
	}
	type row struct {
		ID             string    `json:"id"`
		Created        time.Time `json:"created"`
		Base           string    `json:"base,omitempty"`
		Files          int       `json:"files"`
		Bytes          int64     `json:"bytes"`
		Copied         int       `json:"copied"`
		CopiedBytes    int64     `json:"copied_bytes"`
		Tenants        int       `json:"tenants"`
		ServerKeyCheck string    `json:"server_key_check"`
	}
	rows := []row{}
	for _, m := range ms {
		rows = append(rows, row{m.ID, m.Created, m.Base, len(m.Files), m.Bytes, m.Copied, m.CopiedBytes, len(m.Keys), m.ServerKeyCheck})
	}
	cf := clientFlags{json: *asJSON}
	return cf.output(stdout, rows, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "BACKUP\tCREATED\tFILES\tBYTES\tNEW FILES\tNEW BYTES\tTENANT KEYS\tSERVER KEY")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.ID, fmtTime(r.Created), r.Files, r.Bytes, r.Copied, r.CopiedBytes, r.Tenants, r.ServerKeyCheck)
		}
	})
}

func backupVerify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup repository")
	id := fs.String("backup", "", "the backup to verify (default: every backup)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" {
		return errors.New("--from is required")
	}
	r, err := backup.OpenRepo(*from)
	if err != nil {
		return err
	}
	ids := []string{*id}
	if *id == "" {
		ms, err := r.Backups()
		if err != nil {
			return err
		}
		ids = ids[:0]
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
		if len(ids) == 0 {
			return backup.ErrNoBackup
		}
	}
	var results []backup.VerifyResult
	bad := 0
	for _, i := range ids {
		res, err := r.Verify(i, nil)
		if err != nil {
			return err
		}
		results = append(results, res)
		bad += len(res.Problems)
		for _, p := range res.Problems {
			fmt.Fprintln(stderr, p)
		}
	}
	cf := clientFlags{json: *asJSON}
	if err := cf.output(stdout, results, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "BACKUP\tFILES\tBYTES\tPROBLEMS\tSHREDDED TENANTS")
		for _, r := range results {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", r.Backup, r.Files, r.Bytes, len(r.Problems), len(r.Shredded))
		}
	}); err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d problem(s) found", bad)
	}
	return nil
}

func backupPrune(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup repository")
	keep := fs.Int("keep", 0, "how many of the newest backups to keep (at least 1)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *keep < 1 {
		return errors.New("--from and --keep (at least 1) are required")
	}
	r, err := backup.OpenRepo(*from)
	if err != nil {
		return err
	}
	res, err := r.Prune(*keep)
	if err != nil {
		return err
	}
	cf := clientFlags{json: *asJSON}
	return cf.output(stdout, res, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "DELETED BACKUPS\tKEPT\tFILES REMOVED\tBYTES REMOVED")
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\n", len(res.Deleted), res.Kept, res.Files, res.Bytes)
	})
}

// human prints a byte count for people.
func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
