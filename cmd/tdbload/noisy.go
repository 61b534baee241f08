package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	victim := fs.String("victim", "", "victim credential access-key-id:secret")
	aggressor := fs.String("aggressor", "", "aggressor credential access-key-id:secret")
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
	asJSON := fs.Bool("json", false, "print the phase results as one line of JSON")
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
		if s != "" {
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
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	return loadgen.WriteNoisyText(stdout, res)
}
