package main

// tenantdb tenant restore: an in-place restore of one tenant environment's
// items to a past time, through POST and GET /v1/tenants/{id}/restore.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// tenantRestore starts a restore and, unless --no-wait, follows its
// progress on stderr until it is done; the result goes to stdout (one
// JSON value with --json).
func tenantRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant restore", stderr, os.Getenv)
	var toTime, env string
	var tables multiFlag
	fs.StringVar(&toTime, "to-time", "", "the time to restore to (RFC 3339, e.g. 2026-11-25T10:42:00Z; fractions of a second allowed)")
	fs.Var(&tables, "table", "restore only this table (repeatable; default: every table the tenant sees and holds items of)")
	fs.StringVar(&env, "env", tenancy.LiveEnv, "the tenant's environment to restore, when acting with the operator's key")
	noWait := fs.Bool("no-wait", false, "return once the restore has started (tenant restore-status shows its progress)")
	interval := fs.Duration("interval", time.Second, "how often to print progress while waiting")
	usageFunc(fs, stderr, "usage: tenantdb tenant restore ID|SLUG --to-time RFC3339 [--table NAME]... [flags]\n\n"+
		"Rewinds the tenant's items (its view of shared tables, its own tables) to that time, in place.\n"+
		"Its reads and writes of those tables are refused until the restore is done; other tenants\n"+
		"are not affected. The result's undo_to is the time to restore to in order to undo it.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "ID|SLUG"); err != nil {
		return err
	}
	if toTime == "" {
		return errors.New("--to-time RFC3339 is required")
	}
	at, err := time.Parse(time.RFC3339Nano, toTime)
	if err != nil {
		return fmt.Errorf("--to-time: %w", err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	actor, err := actorFor(ctx, cf, c, pos[0], env)
	if err != nil {
		return err
	}
	r, err := actor.StartRestore(ctx, pos[0], client.RestoreRequest{ToTime: at, Tables: tables})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "restore %s: started; restoring to %s (undo with --to-time %s)\n", r.ID, r.ToTime.UTC().Format(time.RFC3339Nano), r.UndoTo.UTC().Format(time.RFC3339Nano))
	for !*noWait && r.State == "running" {
		if r.Error != "" && !r.Running {
			return fmt.Errorf("restore %s stopped: %s (the tenant's tables stay refused; run the same restore again to finish it)", r.ID, r.Error)
		}
		printRestoreProgress(stderr, r)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(*interval):
		}
		if r, err = actor.Restore(ctx, pos[0]); err != nil {
			return err
		}
	}
	if r.State == "done" {
		printRestoreProgress(stderr, r)
	}
	return cf.output(stdout, r, func(w *tabwriter.Writer) { printRestore(w, r) })
}

// tenantRestoreStatus prints a tenant environment's running or last
// restore.
func tenantRestoreStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant restore-status", stderr, os.Getenv)
	env := fs.String("env", tenancy.LiveEnv, "the tenant's environment, when acting with the operator's key")
	usageFunc(fs, stderr, "usage: tenantdb tenant restore-status ID|SLUG [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 1, "ID|SLUG"); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	actor, err := actorFor(ctx, cf, c, pos[0], *env)
	if err != nil {
		return err
	}
	r, err := actor.Restore(ctx, pos[0])
	if err != nil {
		return err
	}
	return cf.output(stdout, r, func(w *tabwriter.Writer) { printRestore(w, r) })
}

func printRestoreProgress(w io.Writer, r client.TenantRestore) {
	for _, t := range r.Tables {
		state := "waiting"
		switch {
		case t.Done:
			state = "done"
		case t.Keys > 0 || t.Checked > 0:
			state = "restoring"
		}
		fmt.Fprintf(w, "restore %s: %s: %s, %d/%d changed keys checked, %d written back\n", r.ID, t.Name, state, t.Checked, t.Keys, t.Changed)
	}
}

func printRestore(w *tabwriter.Writer, r client.TenantRestore) {
	fmt.Fprintf(w, "RESTORE\t%s\n", r.ID)
	fmt.Fprintf(w, "STATE\t%s\n", r.State)
	fmt.Fprintf(w, "TO TIME\t%s\n", r.ToTime.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "UNDO WITH --to-time\t%s\n", r.UndoTo.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "STARTED\t%s\n", fmtTime(r.Started))
	fmt.Fprintf(w, "FINISHED\t%s\n", fmtTimePtr(r.Finished))
	if r.Error != "" {
		fmt.Fprintf(w, "ERROR\t%s\n", r.Error)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TABLE\tCHANGED KEYS\tCHECKED\tWRITTEN BACK\tDONE")
	for _, t := range r.Tables {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%v\n", t.Name, t.Keys, t.Checked, t.Changed, t.Done)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "%s\t-\t-\t-\tskipped (no items of the tenant)\n", s)
	}
}
