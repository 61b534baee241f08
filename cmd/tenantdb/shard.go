package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/tenantdb/tenantdb/client"
)

// tenantShard is `tenantdb tenant shard ID [--shards N] [--table NAME]`:
// with --shards it changes the shard count of the tenant's tables (all,
// or NAME's) online; without, it shows their layouts and the progress of
// a change.
func tenantShard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant shard", stderr, os.Getenv)
	var req client.ShardRequest
	fs.IntVar(&req.Shards, "shards", 0, "spread the tenant's items over N engine partition keys (a multiple or divisor of the current count; 0: only show)")
	fs.StringVar(&req.Table, "table", "", "only this table (default: every table the tenant has items in)")
	usageFunc(fs, stderr, "usage: tenantdb tenant shard ID|SLUG [--shards N] [--table NAME] [flags]")
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
	var out client.ShardsResult
	if req.Shards != 0 {
		out, err = c.SetShards(ctx, pos[0], req)
	} else {
		if req.Table != "" {
			return fmt.Errorf("--table needs --shards")
		}
		out, err = c.Shards(ctx, pos[0])
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "TABLE\tENV\tSHARDS\tFROM\tPHASE\tMOVED")
		for _, t := range out.Tables {
			from, phase := "-", "-"
			if t.From != 0 {
				from, phase = fmt.Sprint(t.From), t.Phase
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%d\n", t.Table, t.Env, t.Shards, from, phase, t.Moved)
		}
	})
}
