// Command tdbload is tenantdb's load generator and benchmark kit. It talks
// to any DynamoDB endpoint through aws-sdk-go-v2, as a user's application
// would, so the same runs measure tenantdb, dynalite and a no-op server.
//
//	tdbload [run] --endpoint URL --workload put|get|query|batchwrite|transact|mixed ...
//	tdbload noisy --endpoint URL --victim ID:SECRET --aggressor ID:SECRET ...
//	tdbload noop --addr 127.0.0.1:8001
//	tdbload table [--baseline noop,dynalite] RESULTS.jsonl...
//
// See bench/ for the scripts that compare targets.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  tdbload [run] [flags]   drive a workload against a DynamoDB endpoint and report
  tdbload noisy [flags]   issue 4's noisy-neighbour phases (victim vs aggressor tenant)
  tdbload noop [flags]    serve fixed DynamoDB-shaped answers (the client's ceiling)
  tdbload table [flags] FILE...  markdown table of medians from --json results

Run "tdbload SUBCOMMAND -h" for the flags of each.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "tdbload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runLoad(ctx, args, stdout, stderr)
	case "noisy":
		return runNoisy(ctx, args, stdout, stderr)
	case "noop":
		return runNoop(ctx, args, stdout, stderr)
	case "table":
		return runTable(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown subcommand %q", cmd)
}
