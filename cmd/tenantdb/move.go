package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// tenantMove runs `tenantdb tenant move ID [--table NAME] --to silo|pool`:
// it starts the move and, unless --no-wait, prints its progress on stderr
// until every table's move has ended, then the result.
func tenantMove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant move", stderr, os.Getenv)
	var req client.MoveRequest
	fs.StringVar(&req.Table, "table", "", "the shared table whose data of the tenant moves (default: every shared table that is not a silo table, and then the tenant's tier changes to --to, for the shared tables created later)")
	fs.StringVar(&req.To, "to", "", "silo (the tenant's own store) or pool (the server's shared store)")
	noWait := fs.Bool("no-wait", false, "start the move and return; `tenantdb tenant moves ID` shows its progress")
	usageFunc(fs, stderr, "usage: tenantdb tenant move ID|SLUG [--table NAME] --to silo|pool [flags]",
		"Moves the tenant's data online: copy, catch up from the change log, then a",
		"cutover that holds only this tenant's writes of the table for a moment.")
	pos, c, err := cf.parse(fs, args, 1, "a tenant ID or slug")
	if err != nil {
		return err
	}
	if req.To != "silo" && req.To != "pool" {
		return fmt.Errorf("--to must be silo or pool (got %q)", req.To)
	}
	started, err := c.MoveTenant(ctx, pos[0], req)
	if err != nil {
		return err
	}
	ms := started
	if !*noWait {
		if ms, err = waitMoves(ctx, c, pos[0], started, stderr); err != nil {
			return err
		}
	}
	if err := cf.output(stdout, ms, func(w *tabwriter.Writer) { printMoves(w, ms) }); err != nil {
		return err
	}
	for _, m := range ms {
		if m.Phase == "failed" && m.Tier != "" {
			return errors.New("setting the tier to " + m.Tier + " failed: " + m.Error)
		}
		if m.Phase == "failed" {
			return errors.New("move of table " + m.Table + " failed: " + m.Error)
		}
	}
	return nil
}

// waitMoves polls the tenant's moves until those started have ended,
// printing progress at most once a second.
func waitMoves(ctx context.Context, c *client.Client, tenant string, started []client.TenantMove, stderr io.Writer) ([]client.TenantMove, error) {
	p := &progress{w: stderr}
	for {
		all, err := c.Moves(ctx, tenant)
		if err != nil {
			return nil, err
		}
		var cur []client.TenantMove
		done := true
		for _, s := range started {
			m := s
			if !s.Done() {
				for _, a := range all {
					// NB: the newest of the table's moves (running first).
					if a.Table == s.Table && a.To == s.To && !a.Started.Before(s.Started) {
						m = a
						break
					}
				}
			}
			done = done && m.Done()
			cur = append(cur, m)
		}
		var parts []string
		for _, m := range cur {
			if m.Tier != "" {
				parts = append(parts, fmt.Sprintf("tier %s: %s", m.Tier, m.Phase))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s: %d/%d items, %d changes", m.Table, m.Phase, m.Items, m.ItemsTotal, m.Changes))
		}
		p.printf(done, "move: %s", strings.Join(parts, "; "))
		if done {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tenantMoves prints a tenant's moves.
func tenantMoves(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant moves", stderr, os.Getenv)
	usageFunc(fs, stderr, "usage: tenantdb tenant moves ID|SLUG [flags]")
	pos, c, err := cf.parse(fs, args, 1, "a tenant ID or slug")
	if err != nil {
		return err
	}
	ms, err := c.Moves(ctx, pos[0])
	if err != nil {
		return err
	}
	return cf.output(stdout, ms, func(w *tabwriter.Writer) { printMoves(w, ms) })
}

func printMoves(w *tabwriter.Writer, ms []client.TenantMove) {
	fmt.Fprintln(w, "TABLE\tFROM\tTO\tPHASE\tITEMS\tCHANGES\tCUTOVERS\tBLOCKED\tERROR")
	for _, m := range ms {
		if m.Tier != "" {
			// The tenant's tier, set once all its shared tables have moved.
			fmt.Fprintf(w, "(tier)\t%s\t%s\t%s\t\t\t\t\t%s\n", m.From, m.To, m.Phase, m.Error)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%.1fms\t%s\n", m.Table, m.From, m.To, m.Phase, m.Items, m.ItemsTotal, m.Changes, m.Attempts, m.BlockedMS, m.Error)
	}
}
