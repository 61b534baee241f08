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
	name:    "audit",
	summary: "show or verify a tenant's (or the platform's) audit log",
	run:     runAudit,
})

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("audit", stderr, os.Getenv)
	var tenant, from, to string
	var q client.AuditQuery
	var verify, all bool
	tenantFlag(fs, &tenant)
	fs.StringVar(&from, "from", "", "first time: RFC 3339 or a negative duration like -24h (default: the beginning)")
	fs.StringVar(&to, "to", "", "end time (exclusive): RFC 3339 or a duration (default: now)")
	fs.Uint64Var(&q.After, "after", 0, "only records with a larger seq (paging)")
	fs.IntVar(&q.Limit, "limit", 100, "at most this many records (1 to 1000)")
	fs.BoolVar(&all, "all", false, "follow pages until the end (ignores --limit's cap of 1000 in total)")
	fs.BoolVar(&verify, "verify", false, "verify the hash chain instead of listing records")
	usageFunc(fs, stderr, "usage: tenantdb audit [--tenant ID] [flags]", "",
		"Without --tenant: the platform log (operator only).")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if q.From, err = parseWhen(from); err != nil {
		return err
	}
	if q.To, err = parseWhen(to); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	if verify {
		v, err := c.VerifyAudit(ctx, tenant)
		if err != nil {
			return err
		}
		if err := cf.output(stdout, v, func(w *tabwriter.Writer) {
			if v.OK {
				fmt.Fprintf(w, "ok: %d records, chain intact\n", v.Records)
			} else {
				fmt.Fprintf(w, "TAMPERED: %s\n", v.Error)
			}
		}); err != nil {
			return err
		}
		if !v.OK {
			return fmt.Errorf("audit chain verification failed")
		}
		return nil
	}
	page, err := c.Audit(ctx, tenant, q)
	if err != nil {
		return err
	}
	for all && page.NextAfter != 0 {
		q.After = page.NextAfter
		next, err := c.Audit(ctx, tenant, q)
		if err != nil {
			return err
		}
		page.Records = append(page.Records, next.Records...)
		page.NextAfter = next.NextAfter
	}
	return cf.output(stdout, page.Records, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "SEQ\tTIME\tACTOR\tACTION\tTARGET\tOUTCOME\tSOURCE\tREASON")
		for _, r := range page.Records {
			outcome := r.Outcome
			if r.Count > 0 { // a summary of coalesced denials
				outcome = fmt.Sprintf("%s x%d", outcome, r.Count)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, fmtTime(r.Time), dash(r.Actor), r.Action, dash(r.Target), outcome, dash(r.Source), dash(r.Reason))
		}
		if page.NextAfter != 0 {
			fmt.Fprintf(w, "\n(more: --after %d)\n", page.NextAfter)
		}
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
