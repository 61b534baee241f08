package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/loadgen"
)

// loadFlags configure `tdbload run`.
type loadFlags struct {
	client      clientFlags
	workload    string
	mix         string
	concurrency int
	duration    time.Duration
	requests    uint64
	warmup      time.Duration
	itemSize    int
	table       string
	createTable bool
	preload     int
	preloaded   int
	keyspace    int
	batchSize   int
	txItems     int
	tenants     string
	creds       string
	ddlCreds    string
	rate        float64
	serverPID   int
	label       string
	seed        uint64
	json        bool
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f loadFlags
	fs := flag.NewFlagSet("tdbload run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.client.register(fs)
	fs.StringVar(&f.workload, "workload", "put", "workload: "+strings.Join(loadgen.Workloads, "|"))
	fs.StringVar(&f.mix, "mix", loadgen.DefaultMix, "operation weights of the mixed workload")
	fs.IntVar(&f.concurrency, "concurrency", 64, "workers, each with one request in flight")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "length of the measured window (0: until --requests)")
	fs.Uint64Var(&f.requests, "requests", 0, "end the measured window after this many requests (0: no limit)")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "load before the measured window, not recorded")
	fs.IntVar(&f.itemSize, "item-size", 1024, "DynamoDB size of written items in bytes")
	fs.StringVar(&f.table, "table", "tdbload", "table name")
	fs.BoolVar(&f.createTable, "create-table", false, "create the table (pk S hash, sk S range) if missing")
	fs.IntVar(&f.preload, "preload", 0, "seed items 0..N-1 per tenant first (N/20 collections of 20 items); get and query read them")
	fs.IntVar(&f.preloaded, "preloaded", -1, "items 0..N-1 already seeded by an earlier --preload, for get and query (default: --preload)")
	fs.IntVar(&f.keyspace, "keyspace", 0, "distinct items the writes address (default max(preload, 100000))")
	fs.IntVar(&f.batchSize, "batch-size", 25, "puts per BatchWriteItem")
	fs.IntVar(&f.txItems, "tx-items", 4, "puts per TransactWriteItems")
	fs.StringVar(&f.tenants, "tenants", "", "file of tenant credentials, one access-key-id:secret per line (or tenantdb key create --json output)")
	fs.StringVar(&f.creds, "credentials", "", "comma-separated access-key-id:secret tenant credentials")
	fs.StringVar(&f.ddlCreds, "ddl-credentials", "", "access-key-id:secret for --create-table (default: the first tenant)")
	fs.Float64Var(&f.rate, "rate", 0, "total request rate limit in requests/s (0: unbounded)")
	fs.IntVar(&f.serverPID, "server-pid", 0, "server process whose CPU time per request is reported")
	fs.StringVar(&f.label, "label", "", "name of the run in reports (e.g. the target)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed for key choice (0: random)")
	fs.BoolVar(&f.json, "json", false, "print the result as one line of JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1")
	}
	if f.preloaded < 0 {
		f.preloaded = f.preload
	}
	if f.preload < 0 || f.keyspace < 0 {
		return fmt.Errorf("--preload and --keyspace must not be negative")
	}
	if _, err := loadgen.MixFor(f.workload, f.mix); err != nil {
		return err
	}
	creds, err := loadCredentials(f.tenants, f.creds)
	if err != nil {
		return err
	}
	if len(creds) > f.concurrency {
		fmt.Fprintf(stderr, "tdbload: %d tenants but only %d workers: only the first %d tenants send load\n", len(creds), f.concurrency, f.concurrency)
		creds = creds[:f.concurrency]
	}
	hc := newHTTPClient(f.concurrency)
	clients := make([]*dynamodb.Client, len(creds))
	for i, c := range creds {
		clients[i] = newClient(&f.client, hc, c)
	}
	ddl := clients[0]
	if f.ddlCreds != "" {
		c, err := loadgen.ParseCredential(f.ddlCreds)
		if err != nil {
			return fmt.Errorf("--ddl-credentials: %w", err)
		}
		ddl = newClient(&f.client, hc, c)
	}

	setupCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := loadgen.EnsureTable(setupCtx, ddl, f.table, f.createTable); err != nil {
		return err
	}
	if f.preload > 0 {
		start := time.Now()
		fmt.Fprintf(stderr, "tdbload: preloading %d items x %d tenants into %s\n", f.preload, len(clients), f.table)
		if err := loadgen.Preload(setupCtx, clients, f.table, f.preload, f.itemSize, f.concurrency); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "tdbload: preloaded in %.1fs\n", time.Since(start).Seconds())
	}
	res, err := loadgen.Run(ctx, loadgen.Config{
		Clients:     clients,
		Table:       f.table,
		Workload:    f.workload,
		Mix:         f.mix,
		Concurrency: f.concurrency,
		Duration:    f.duration,
		Requests:    f.requests,
		Warmup:      f.warmup,
		Rate:        f.rate,
		ItemSize:    f.itemSize,
		Keyspace:    f.keyspace,
		Preloaded:   f.preloaded,
		BatchSize:   f.batchSize,
		TxItems:     f.txItems,
		Timeout:     f.client.timeout,
		ServerPID:   f.serverPID,
		Label:       f.label,
		Seed:        f.seed,
	})
	if err != nil {
		return err
	}
	res.Endpoint = f.client.endpoint
	if f.json {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	return res.WriteText(stdout)
}
