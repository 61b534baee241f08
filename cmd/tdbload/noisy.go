package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/loadgen"
)

func runNoisy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := flag.NewFlagSet("tdbload noisy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf.register(fs)
	table := fs.String("table", "tdbload", "table name (both tenants)")
	createTable := fs.Bool("create-table", false, "create the table if missing (as each tenant, so tenant-owned tables work too)")
	preload := fs.Int("preload", 2000, "items to seed per tenant before phase 1 (0: none, use --preloaded)")
	preloaded := fs.Int("preloaded", -1, "items already seeded per tenant (default: --preload)")
	itemSize := fs.Int("item-size", 1024, "DynamoDB size of written items in bytes")
	tenants := fs.String("tenants", "", "credentials file: first line the victim, second the aggressor")
	victim := fs.String("victim", "", "victim credential access-key-id:secret, or @FILE (its first credential)")
	aggressor := fs.String("aggressor", "", "aggressor credential access-key-id:secret, or @FILE (its first credential)")
	vWorkload := fs.String("victim-workload", "mixed", "victim workload")
	vMix := fs.String("victim-mix", "get=50,put=50", "victim mix (mixed workload)")
	vRate := fs.Float64("victim-rate", 200, "victim's steady rate, requests/s")
	vConc := fs.Int("victim-concurrency", 8, "victim workers")
	aWorkload := fs.String("aggressor-workload", "put", "aggressor workload")
	aMix := fs.String("aggressor-mix", loadgen.DefaultMix, "aggressor mix (mixed workload)")
	aConc := fs.Int("aggressor-concurrency", 128, "aggressor workers (connections)")
	quota := fs.Float64("aggressor-quota", 100, "aggressor's quota on the server, in requests/s of its workload")
	overload := fs.Float64("overload", 10, "phase 2 rate as a multiple of the quota")
	p3Rate := fs.Float64("phase3-rate", 0, "aggressor rate in phase 3 (0: the quota; -1: unbounded)")
	p3Workload := fs.String("phase3-workload", "", "aggressor workload in phase 3 (default: --aggressor-workload)")
	phaseDur := fs.Duration("phase-duration", 10*time.Second, "measured length of each phase")
	warmup := fs.Duration("warmup", time.Second, "unrecorded load at the start of each phase")
	pause := fs.Duration("pause", 2*time.Second, "idle time between phases")
	phases := fs.String("phases", "1,2,3", "phases to run")
	hook := fs.String("phase-hook", "", "shell command run before each phase with TDBLOAD_PHASE=N (e.g. to set quotas)")
	serverPID := fs.Int("server-pid", 0, "server process whose CPU use is reported per phase")
	aggProc := fs.Bool("aggressor-process", true, "run the aggressor's client in a separate process")
	aggNice := fs.Int("aggressor-nice", 10, "nice value of the aggressor's process, so its client does not starve the victim's (0: unchanged)")
	asJSON := fs.Bool("json", false, "print the phase results as one line of JSON")
	jsonOut := fs.String("json-out", "", "also write the phase results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	creds := []loadgen.Credential{
		{AccessKeyID: "tdbload-victim", SecretAccessKey: "victim-secret"},
		{AccessKeyID: "tdbload-aggressor", SecretAccessKey: "aggressor-secret"},
	}
	if *tenants != "" {
		cs, err := loadCredentials(*tenants, "")
		if err != nil {
			return err
		}
		if len(cs) < 2 {
			return fmt.Errorf("%s: need two credentials (victim, aggressor), found %d", *tenants, len(cs))
		}
		creds = cs[:2]
	}
	for i, s := range []string{*victim, *aggressor} {
		switch {
		case strings.HasPrefix(s, "@"):
			cs, err := loadCredentials(s[1:], "")
			if err != nil {
				return err
			}
			creds[i] = cs[0]
		case s != "":
			c, err := loadgen.ParseCredential(s)
			if err != nil {
				return err
			}
			creds[i] = c
		}
	}
	var phaseList []int
	for _, p := range strings.Split(*phases, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 3 {
			return fmt.Errorf("--phases: %q is not a phase (1, 2 or 3)", p)
		}
		phaseList = append(phaseList, n)
	}
	if *preloaded < 0 {
		*preloaded = *preload
	}

	hc := newHTTPClient(*vConc + *aConc)
	vc := newClient(&cf, hc, creds[0])
	ac := newClient(&cf, hc, creds[1])
	setupCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for _, c := range []*dynamodb.Client{vc, ac} {
		if err := loadgen.EnsureTable(setupCtx, c, *table, *createTable); err != nil {
			return err
		}
	}
	if *preload > 0 {
		fmt.Fprintf(stderr, "tdbload: preloading %d items for each tenant\n", *preload)
		if err := loadgen.Preload(setupCtx, []*dynamodb.Client{vc, ac}, *table, *preload, *itemSize, 16); err != nil {
			return err
		}
	}

	base := loadgen.Config{Table: *table, ItemSize: *itemSize, Preloaded: *preloaded, Timeout: cf.timeout}
	vcfg, acfg := base, base
	vcfg.Clients, vcfg.Workload, vcfg.Mix, vcfg.Rate, vcfg.Concurrency = []*dynamodb.Client{vc}, *vWorkload, *vMix, *vRate, *vConc
	vcfg.Duration, vcfg.Warmup, vcfg.ServerPID = *phaseDur, *warmup, *serverPID
	acfg.Clients, acfg.Workload, acfg.Mix, acfg.Concurrency = []*dynamodb.Client{ac}, *aWorkload, *aMix, *aConc
	ncfg := loadgen.NoisyConfig{
		Victim: vcfg, Aggressor: acfg,
		AggressorQuota: *quota, Overload: *overload,
		Phase3Rate: *p3Rate, Phase3Workload: *p3Workload,
		Phases: phaseList, Pause: *pause,
	}
	if *aggProc {
		dir, err := os.MkdirTemp("", "tdbload-noisy")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		credFile := filepath.Join(dir, "aggressor-credentials")
		line := creds[1].AccessKeyID + ":" + creds[1].SecretAccessKey + "\n"
		if err := os.WriteFile(credFile, []byte(line), 0o600); err != nil {
			return err
		}
		ncfg.RunAggressor = func(ctx context.Context, c loadgen.Config) (*loadgen.Result, error) {
			return runChild(ctx, stderr, *aggNice, []string{
				"run", "--endpoint", cf.endpoint, "--region", cf.region, "--retries", strconv.Itoa(cf.retries),
				"--timeout", cf.timeout.String(), "--tenants", credFile, "--table", c.Table,
				"--workload", c.Workload, "--mix", c.Mix, "--concurrency", strconv.Itoa(c.Concurrency),
				"--duration", c.Duration.String(), "--warmup", c.Warmup.String(),
				"--rate", strconv.FormatFloat(c.Rate, 'g', -1, 64), "--item-size", strconv.Itoa(c.ItemSize),
				"--preloaded", strconv.Itoa(c.Preloaded), "--label", c.Label, "--json",
			})
		}
	}
	ncfg.Hook = func(ctx context.Context, phase int) error {
		fmt.Fprintf(stderr, "tdbload: phase %d\n", phase)
		if *hook == "" {
			return nil
		}
		cmd := exec.CommandContext(ctx, "sh", "-c", *hook)
		cmd.Env = append(os.Environ(), "TDBLOAD_PHASE="+strconv.Itoa(phase))
		cmd.Stdout, cmd.Stderr = stderr, stderr
		return cmd.Run()
	}
	res, err := loadgen.RunNoisy(ctx, ncfg)
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if *asJSON {
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	return loadgen.WriteNoisyText(stdout, res)
}

// runChild runs this binary with args in a child process, lowered in
// priority by nice, and decodes the Result it prints with --json.
func runChild(ctx context.Context, stderr io.Writer, nice int, args []string) (*loadgen.Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if nice != 0 {
		// Best effort: a failure leaves the child at our priority.
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, nice)
	}
	var res loadgen.Result
	decErr := json.NewDecoder(out).Decode(&res)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("aggressor process: %w", err)
	}
	if decErr != nil {
		return nil, fmt.Errorf("aggressor process output: %w", decErr)
	}
	return &res, nil
}
