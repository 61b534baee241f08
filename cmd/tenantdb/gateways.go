package main

// Gateways: `tenantdb gateways` over GET /v1/gateways (client.Client's
// Gateways).

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
	name:    "gateways",
	summary: "list the live gateways over the remote engine (operator only)",
	run:     runGateways,
})

func runGateways(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("gateways", stderr, os.Getenv)
	usageFunc(fs, stderr, "usage: tenantdb gateways [flags]",
		"",
		"The gateways whose heartbeat record in the engine is alive (renewed within",
		"its lease), oldest first; * marks the gateway that answered.")
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
	out, err := c.Gateways(ctx)
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) { printGateways(w, out) })
}

func printGateways(w *tabwriter.Writer, out client.GatewaysResult) {
	fmt.Fprintln(w, "ID\tENDPOINT\tHOST\tPID\tSTARTED\tHEARTBEAT")
	for _, g := range out.Gateways {
		id := g.ID
		if g.Self {
			id += " *"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s ago\n", id, g.Endpoint, g.Host, g.PID,
			g.Started.Format(time.RFC3339), time.Since(g.Heartbeat).Round(100*time.Millisecond))
	}
}
