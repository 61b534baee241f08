package main

// `tenantdb subscription`: webhook subscriptions of a table's changes,
// through the admin endpoints (client.Client's subscription calls).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

var _ = register(&command{
	name:    "subscription",
	summary: "deliver a table's changes to an HTTPS endpoint (webhooks)",
	run:     runSubscription,
})

func runSubscription(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	one := func(name, usage string, fn func(c *client.Client, tenant, id string) (any, error)) verb {
		return verb{name, name + " --tenant ID SUBSCRIPTION" + usage, func(a []string, o, e io.Writer) error {
			return subscriptionOne(ctx, name, a, o, e, fn)
		}}
	}
	show := func(v any, err error) (any, error) { return v, err }
	return dispatchVerb("subscription", []verb{
		{"create", "create --tenant ID --table NAME --url URL [--filter EXPR] [--events INSERT,MODIFY,REMOVE] [--json]",
			func(a []string, o, e io.Writer) error { return subscriptionCreate(ctx, a, o, e) }},
		{"list", "list --tenant ID", func(a []string, o, e io.Writer) error { return subscriptionList(ctx, a, o, e) }},
		one("show", "", func(c *client.Client, t, id string) (any, error) { return show(c.Subscription(ctx, t, id)) }),
		one("pause", "", func(c *client.Client, t, id string) (any, error) { return show(c.PauseSubscription(ctx, t, id)) }),
		one("resume", "", func(c *client.Client, t, id string) (any, error) { return show(c.ResumeSubscription(ctx, t, id)) }),
		one("delete", "", func(c *client.Client, t, id string) (any, error) {
			return map[string]string{"id": id, "deleted": "true"}, c.DeleteSubscription(ctx, t, id)
		}),
		{"replay", "replay --tenant ID SUBSCRIPTION (--from RFC3339|SEQUENCE | --dead-letters)",
			func(a []string, o, e io.Writer) error { return subscriptionReplay(ctx, a, o, e) }},
		{"deliveries", "deliveries --tenant ID SUBSCRIPTION [--limit N]",
			func(a []string, o, e io.Writer) error { return subscriptionDeliveries(ctx, a, o, e) }},
		{"dead-letters", "dead-letters --tenant ID SUBSCRIPTION [--limit N]",
			func(a []string, o, e io.Writer) error { return subscriptionDeadLetters(ctx, a, o, e) }},
		{"rotate-secret", "rotate-secret --tenant ID SUBSCRIPTION [--overlap DURATION]",
			func(a []string, o, e io.Writer) error { return subscriptionRotate(ctx, a, o, e) }},
	}, args, stdout, stderr)
}

func subscriptionCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("subscription create", stderr, os.Getenv)
	var tenant, events, values, names string
	var req client.CreateSubscriptionRequest
	var retry time.Duration
	tenantFlag(fs, &tenant)
	fs.StringVar(&req.Table, "table", "", "the table whose changes are delivered")
	fs.StringVar(&req.URL, "url", "", "the https:// endpoint deliveries are POSTed to")
	fs.StringVar(&req.Filter, "filter", "", "a FilterExpression on the new image (the old one for REMOVE), e.g. 'begins_with(sk, :o)'")
	fs.StringVar(&values, "filter-values", "", `the filter's ExpressionAttributeValues in DynamoDB JSON, e.g. '{":o":{"S":"OUTBOX#"}}'`)
	fs.StringVar(&names, "filter-names", "", `the filter's ExpressionAttributeNames as JSON, e.g. '{"#s":"status"}'`)
	fs.StringVar(&events, "events", "", "the event kinds to deliver, comma-separated (default INSERT,MODIFY,REMOVE)")
	fs.StringVar(&req.Env, "env", "", "the tenant environment whose table is subscribed (default: the key's own; live for the operator)")
	fs.IntVar(&req.BatchSize, "batch-size", 0, "records per delivery at most (default 100)")
	fs.DurationVar(&retry, "retry-period", 0, "how long a failing delivery is retried before it is dead-lettered (default 24h)")
	usageFunc(fs, stderr, "usage: tenantdb subscription create --tenant ID --table NAME --url URL [flags]",
		"",
		"Prints the subscription with its signing secret, which is shown only now.",
		"Deliveries carry the header Tenantdb-Signature: t=<unix seconds>,v1=<hex",
		"HMAC-SHA256(secret, \"<t>.<body>\")>; receivers deduplicate by eventID.")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if tenant == "" || req.Table == "" || req.URL == "" {
		return errors.New("--tenant, --table and --url are required")
	}
	if events != "" {
		req.Events = strings.Split(events, ",")
	}
	if values != "" {
		if !json.Valid([]byte(values)) {
			return errors.New("--filter-values must be JSON, e.g. '{\":o\":{\"S\":\"OUTBOX#\"}}'")
		}
		req.FilterValues = json.RawMessage(values)
	}
	if names != "" {
		if err := json.Unmarshal([]byte(names), &req.FilterNames); err != nil {
			return errors.New("--filter-names must be a JSON object of strings, e.g. '{\"#s\":\"status\"}'")
		}
	}
	if retry < 0 {
		return errors.New("--retry-period must be positive")
	}
	req.RetryPeriodSeconds = int64(retry / time.Second)
	if retry > 0 && req.RetryPeriodSeconds == 0 {
		req.RetryPeriodSeconds = 1
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	out, err := c.CreateSubscription(ctx, tenant, req)
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) {
		printSubscription(w, out)
		fmt.Fprintln(w, "\nThe secret is shown only now. Store it safely.")
	})
}

func printSubscription(w *tabwriter.Writer, s client.Subscription) {
	fmt.Fprintf(w, "id\t%s\n", s.ID)
	fmt.Fprintf(w, "tenant\t%s\n", s.TenantID)
	fmt.Fprintf(w, "env\t%s\n", s.Env)
	fmt.Fprintf(w, "table\t%s\n", s.Table)
	fmt.Fprintf(w, "url\t%s\n", s.URL)
	if s.Filter != "" {
		fmt.Fprintf(w, "filter\t%s\n", s.Filter)
	}
	if len(s.FilterNames) > 0 {
		b, _ := json.Marshal(s.FilterNames)
		fmt.Fprintf(w, "filter names\t%s\n", b)
	}
	if len(s.FilterValues) > 0 {
		fmt.Fprintf(w, "filter values\t%s\n", s.FilterValues)
	}
	fmt.Fprintf(w, "events\t%s\n", strings.Join(s.Events, ","))
	fmt.Fprintf(w, "batch size\t%d\n", s.BatchSize)
	fmt.Fprintf(w, "retry period\t%s\n", time.Duration(s.RetryPeriodSeconds)*time.Second)
	state := s.State
	if s.StateReason != "" {
		state += " (" + s.StateReason + ")"
	}
	fmt.Fprintf(w, "state\t%s\n", state)
	fmt.Fprintf(w, "cursor\t%s\n", s.Cursor)
	if s.FailingSince != nil {
		fmt.Fprintf(w, "failing since\t%s\n", fmtTimePtr(s.FailingSince))
	}
	fmt.Fprintf(w, "dead letters\t%d\n", s.DeadLetters)
	for _, sc := range s.Secrets {
		exp := ""
		if sc.Expires != nil {
			exp = ", stops signing " + fmtTimePtr(sc.Expires)
		}
		fmt.Fprintf(w, "secret\t%s (created %s%s)\n", sc.ID, fmtTime(sc.Created), exp)
	}
	if s.Secret != "" {
		fmt.Fprintf(w, "signing secret\t%s\n", s.Secret)
	}
}

func subscriptionList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newClientFlagSet("subscription list", stderr, os.Getenv)
	var tenant string
	tenantFlag(fs, &tenant)
	usageFunc(fs, stderr, "usage: tenantdb subscription list --tenant ID [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := needArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if tenant == "" {
		return errors.New("--tenant is required")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	out, err := c.Subscriptions(ctx, tenant)
	if err != nil {
		return err
	}
	return cf.output(stdout, client.SubscriptionList{Subscriptions: out}, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "ID\tENV\tTABLE\tSTATE\tURL\tEVENTS\tDEAD LETTERS")
		for _, s := range out {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, s.Env, s.Table, s.State, s.URL, strings.Join(s.Events, ","), s.DeadLetters)
		}
	})
}

// subscriptionFlags parses the flags of a verb on one subscription.
func subscriptionFlags(name string, args []string, stderr io.Writer, extra func(fs *flag.FlagSet)) (cf *clientFlags, tenant, id string, err error) {
	fs, cf := newClientFlagSet("subscription "+name, stderr, os.Getenv)
	tenantFlag(fs, &tenant)
	if extra != nil {
		extra(fs)
	}
	usageFunc(fs, stderr, "usage: tenantdb subscription "+name+" --tenant ID SUBSCRIPTION [flags]")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, "", "", err
	}
	if err := needArgs(pos, 1, "the subscription id"); err != nil {
		return nil, "", "", err
	}
	if tenant == "" {
		return nil, "", "", errors.New("--tenant is required")
	}
	return cf, tenant, pos[0], nil
}

func subscriptionOne(ctx context.Context, name string, args []string, stdout, stderr io.Writer, fn func(c *client.Client, tenant, id string) (any, error)) error {
	cf, tenant, id, err := subscriptionFlags(name, args, stderr, nil)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	out, err := fn(c, tenant, id)
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) {
		if s, ok := out.(client.Subscription); ok {
			printSubscription(w, s)
		} else {
			fmt.Fprintf(w, "subscription %s deleted\n", id)
		}
	})
}

func subscriptionReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var from string
	var dead bool
	cf, tenant, id, err := subscriptionFlags("replay", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&from, "from", "", "replay from an RFC 3339 time, a record's SequenceNumber, or a cursor")
		fs.BoolVar(&dead, "dead-letters", false, "deliver the dead-letter list again instead")
	})
	if err != nil {
		return err
	}
	if (from == "") == !dead {
		return errors.New("give exactly one of --from and --dead-letters")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var out client.Subscription
	if dead {
		out, err = c.ReplayDeadLetters(ctx, tenant, id)
	} else {
		out, err = c.ReplaySubscription(ctx, tenant, id, from)
	}
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) { printSubscription(w, out) })
}

func subscriptionDeliveries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var limit int
	cf, tenant, id, err := subscriptionFlags("deliveries", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&limit, "limit", 20, "how many recent attempts (at most 200 are kept)")
	})
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	out, err := c.SubscriptionDeliveries(ctx, tenant, id, limit)
	if err != nil {
		return err
	}
	return cf.output(stdout, client.DeliveryList{Deliveries: out}, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "TIME\tSTATUS\tLATENCY MS\tRECORDS\tOUTCOME\tSEQUENCES\tERROR")
		for _, d := range out {
			seq := d.FirstSequence
			if d.LastSequence != d.FirstSequence {
				seq += ".." + d.LastSequence
			}
			fmt.Fprintf(w, "%s\t%d\t%.1f\t%d\t%s\t%s\t%s\n", fmtTime(d.Time), d.Status, d.LatencyMS, d.Records, d.Outcome, seq, d.Error)
		}
	})
}

func subscriptionDeadLetters(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var limit int
	cf, tenant, id, err := subscriptionFlags("dead-letters", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&limit, "limit", 100, "how many dead letters, oldest first")
	})
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	out, err := c.SubscriptionDeadLetters(ctx, tenant, id, limit)
	if err != nil {
		return err
	}
	return cf.output(stdout, client.DeadLetterList{DeadLetters: out}, func(w *tabwriter.Writer) {
		fmt.Fprintln(w, "N\tTIME\tSTATUS\tRECORDS\tERROR")
		for _, d := range out {
			fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\n", d.N, fmtTime(d.Time), d.Status, len(d.Records), d.Error)
		}
	})
}

func subscriptionRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var overlap time.Duration
	cf, tenant, id, err := subscriptionFlags("rotate-secret", args, stderr, func(fs *flag.FlagSet) {
		fs.DurationVar(&overlap, "overlap", 24*time.Hour, "how long the previous secret keeps signing beside the new one")
	})
	if err != nil {
		return err
	}
	if overlap <= 0 {
		return errors.New("--overlap must be positive")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	out, err := c.RotateSubscriptionSecret(ctx, tenant, id, overlap)
	if err != nil {
		return err
	}
	return cf.output(stdout, out, func(w *tabwriter.Writer) {
		printSubscription(w, out)
		fmt.Fprintln(w, "\nThe new secret is shown only now. Both secrets sign until the overlap ends.")
	})
}
