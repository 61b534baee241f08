package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "server-key",
	summary: "show or rotate the server key that wraps every tenant's data key",
	run:     runServerKey,
})

func runServerKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatchVerb("server-key", []verb{
		{"show", "show", func(a []string, o, e io.Writer) error { return serverKeyCmd(ctx, false, a, o, e) }},
		{"rotate", "rotate   (new server key; re-wraps every tenant key and credential secret online)", func(a []string, o, e io.Writer) error { return serverKeyCmd(ctx, true, a, o, e) }},
	}, args, stdout, stderr)
}

func serverKeyCmd(ctx context.Context, rotate bool, args []string, stdout, stderr io.Writer) error {
	name := "server-key show"
	if rotate {
		name = "server-key rotate"
	}
	fs, cf := newClientFlagSet(name, stderr, os.Getenv)
	usageFunc(fs, stderr, "usage: tenantdb "+name+" [flags]")
	_, c, err := cf.parse(fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	var st client.ServerKeyStatus
	if rotate {
		st, err = c.RotateServerKey(ctx)
	} else {
		st, err = c.ServerKey(ctx)
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, st, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "KEY CHECK\tTENANT KEYS UNDER IT\tUNDER ANOTHER")
		fmt.Fprintf(w, "%s\t%d\t%d\n", st.Check, st.Current, st.Other)
		if st.Rotation != "" {
			fmt.Fprintf(w, "rotation in progress: %s\n", st.Rotation)
		}
	})
}

func printEncryption(w *tabwriter.Writer, e client.Encryption) {
	fmt.Fprintln(w, "ALGORITHM\tKEY VERSION\tROTATION\tRE-ENCRYPTED\tSTATE")
	rot, state := "-", "idle"
	var done int64
	if e.Rotation != nil {
		rot, done = fmt.Sprintf("%d -> %d", e.Rotation.From, e.Rotation.To), e.Rotation.Done
		state = "paused (resumes at the next start or rotate-key)"
		if e.Running {
			state = "running"
		} else if e.Rotation.Owner != "" {
			state = "running on gateway " + e.Rotation.Owner + " (another takes it over if it stops)"
		}
	}
	if e.Error != "" {
		state += ": " + e.Error
	}
	if e.Legacy {
		state += " (values from before encryption not yet re-encrypted)"
	}
	fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\n", e.Algorithm, e.Version, rot, done, state)
}

func tenantEncryption(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant encryption", stderr, os.Getenv)
	usageFunc(fs, stderr, "usage: tenantdb tenant encryption ID|SLUG [flags]")
	pos, c, err := cf.parse(fs, args, 1, "a tenant ID or slug")
	if err != nil {
		return err
	}
	e, err := c.Encryption(ctx, pos[0])
	if err != nil {
		return err
	}
	return cf.output(stdout, e, func(w *tabwriter.Writer) { printEncryption(w, e) })
}

// tenantRotateKey starts a rotation and, unless --no-wait, follows its
// progress until it is done, printing it every --interval.
func tenantRotateKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("tenant rotate-key", stderr, os.Getenv)
	noWait := fs.Bool("no-wait", false, "return once the rotation has started (see tenant encryption for its progress)")
	interval := fs.Duration("interval", time.Second, "how often to print progress while waiting")
	usageFunc(fs, stderr, "usage: tenantdb tenant rotate-key ID|SLUG [flags]")
	pos, c, err := cf.parse(fs, args, 1, "a tenant ID or slug")
	if err != nil {
		return err
	}
	e, err := c.RotateTenantKey(ctx, pos[0])
	if err != nil {
		return err
	}
	for !*noWait && e.Rotation != nil {
		if e.Error != "" && !e.Running {
			return fmt.Errorf("rotation stopped: %s (run rotate-key again to resume)", e.Error)
		}
		fmt.Fprintf(stderr, "re-encrypting: %d values done (key version %d -> %d)\n", e.Rotation.Done, e.Rotation.From, e.Rotation.To)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(*interval):
		}
		if e, err = c.Encryption(ctx, pos[0]); err != nil {
			return err
		}
	}
	return cf.output(stdout, e, func(w *tabwriter.Writer) { printEncryption(w, e) })
}
