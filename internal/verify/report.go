package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Check runs the verification (Run) and writes its report to w, as text
// or, with asJSON, as one JSON object. It returns Run's error, or the
// report's (Report.Err): non-nil on any leak. `tenantdb verify` is this
// function behind flags.
func Check(ctx context.Context, o Options, w io.Writer, asJSON bool) error {
	rep, err := Run(ctx, o)
	if rep != nil {
		if werr := rep.Write(w, asJSON); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	if len(rep.Cleanup) > 0 {
		if lerr := rep.Err(); lerr != nil {
			return lerr
		}
		return fmt.Errorf("verify: could not delete what the run created: %v", rep.Cleanup)
	}
	return rep.Err()
}

// Write writes r as text or, with asJSON, as one indented JSON object.
func (r *Report) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		out := *r
		if out.Families == nil {
			out.Families = []Family{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	verdict := "no leaks"
	switch {
	case r.Leaks > 0:
		verdict = fmt.Sprintf("%d LEAKS", r.Leaks)
	case r.Inconclusive > 0:
		verdict = fmt.Sprintf("no leaks, but %d attempts INCONCLUSIVE", r.Inconclusive)
	}
	if r.Skipped > 0 {
		verdict += fmt.Sprintf(" (%d families SKIPPED: the server does not serve them)", r.Skipped)
	}
	fmt.Fprintf(w, "tenantdb verify of %s (run %s, %s): %d attempts, %s\n\n", r.Endpoint, r.Run, r.Duration, r.Attempts, verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAMILY\tATTEMPTS\tLEAKS\tINCONCLUSIVE\tSKIPPED")
	for _, f := range r.Families {
		skipped := "-"
		if f.Skipped != "" {
			skipped = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", f.Name, f.Attempts, f.Leaks, f.Inconclusive, skipped)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range r.Families {
		for _, s := range f.Findings {
			fmt.Fprintf(w, "LEAK %s: %s\n", f.Name, s)
		}
	}
	for _, f := range r.Families {
		if f.Skipped != "" {
			fmt.Fprintf(w, "SKIPPED %s: %s\n", f.Name, f.Skipped)
		}
	}
	for _, s := range r.Cleanup {
		fmt.Fprintf(w, "NOT CLEANED UP: %s\n", s)
	}
	_, err := fmt.Fprintln(w)
	return err
}
