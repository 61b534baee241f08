package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/backup"
	"github.com/tenantdb/tenantdb/internal/node"
)

// TestOperatorBackupBench measures operator backups (issue 15) on a store
// of N items of about 200 bytes written through the server: a full
// backup, an incremental one after more writes, verify and restore, and
// what PutItem writers (4 connections) see during a backup against the
// same writers without one, measured before and after. It runs on demand:
//
//	TENANTDB_BACKUP_BENCH=1000000 [TENANTDB_BACKUP_BENCH_SILOS=20] \
//	  go test -run TestOperatorBackupBench -v -timeout 60m ./tests/bench/
//
// TENANTDB_BACKUP_BENCH_RATES=0,32 runs instead full backups of the same
// store at each copy rate limit (MiB/s; 0 = none), three rounds, each
// after 15 s without a backup, and compares the writers' puts/s.
//
// TENANTDB_BACKUP_BENCH_SILOS=k adds k tenants with an item each in a
// silo table, whose stores are open during the backups: writes are then
// held while the stores are copied at one moment (engine.Checkpoint).
func TestOperatorBackupBench(t *testing.T) {
	spec := os.Getenv("TENANTDB_BACKUP_BENCH")
	if spec == "" {
		t.Skip("set TENANTDB_BACKUP_BENCH=<items> to run")
	}
	items, err := strconv.Atoi(spec)
	if err != nil || items <= 0 {
		t.Fatalf("TENANTDB_BACKUP_BENCH=%q: want a number of items", spec)
	}
	ctx := context.Background()
	dataDir, scratch := t.TempDir(), t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Open(ctx, node.Options{DataDir: dataDir, Endpoint: l.Addr().String(), DefaultTenant: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n.Shutdown(sctx)
		<-served
		n.Close()
	})
	ik := n.Bootstrap().Default
	tg := &target{addr: l.Addr().String(), akid: ik.AccessKeyID(), secret: ik.Secret}
	c := tg.dial(t)
	c.must(t, tg.sign(t, "CreateTable", `{"TableName":"`+table+`","BillingMode":"PAY_PER_REQUEST",`+
		`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}`))
	c.close()

	if k, _ := strconv.Atoi(os.Getenv("TENANTDB_BACKUP_BENCH_SILOS")); k > 0 {
		opk := n.Bootstrap().Operator
		op := &target{addr: tg.addr, akid: opk.AccessKeyID(), secret: opk.Secret}
		c := op.dial(t)
		c.must(t, op.sign(t, "CreateTable", `{"TableName":"silo_t","BillingMode":"PAY_PER_REQUEST",`+
			`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],`+
			`"Tags":[{"Key":"tenantdb:isolation","Value":"silo"}]}`))
		c.close()
		adm := client.New("http://"+tg.addr, opk.String())
		for i := range k {
			tn, err := adm.CreateTenant(ctx, client.CreateTenantRequest{Name: fmt.Sprintf("silo-%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			key, err := adm.CreateKey(ctx, tn.ID, client.CreateKeyRequest{Role: "app"})
			if err != nil {
				t.Fatal(err)
			}
			st := &target{addr: tg.addr, akid: key.AccessKeyID, secret: key.SecretAccessKey}
			c := st.dial(t)
			c.must(t, st.sign(t, "PutItem", `{"TableName":"silo_t","Item":{"pk":{"S":"x"}}}`))
			c.close()
		}
		t.Logf("%d silo tenants, their stores open", k)
	}
	small := func(prefix string, i int) string {
		return fmt.Sprintf(`{"pk":{"S":"%s%08d"},"sk":{"S":"s%02d"},"data":{"S":"%s"}}`, prefix, i/20, i%20, strings.Repeat("d", 160))
	}
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := tg.dial(t)
			defer c.close()
			for {
				lo := int(next.Add(25)) - 25
				if lo >= items {
					return
				}
				var reqs []string
				for i := lo; i < min(lo+25, items); i++ {
					reqs = append(reqs, `{"PutRequest":{"Item":`+small("p", i)+`}}`)
				}
				c.must(t, tg.sign(t, "BatchWriteItem", `{"RequestItems":{"`+table+`":[`+strings.Join(reqs, ",")+`]}}`))
			}
		}()
	}
	wg.Wait()
	t.Logf("loaded %d items in %.1f s; data directory %s", items, time.Since(began).Seconds(), human(duBytes(t, dataDir)))

	// Writers put new items from 4 connections through every phase,
	// recording when each request ended and how long it took; the phases
	// are windows of that record.
	type op struct {
		end time.Time
		lat time.Duration
	}
	var seq atomic.Int64
	stop := make(chan struct{})
	recs := make([][]op, 4)
	var ww sync.WaitGroup
	for i := range recs {
		ww.Add(1)
		go func() {
			defer ww.Done()
			c := tg.dial(t)
			defer c.close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req := tg.sign(t, "PutItem", `{"TableName":"`+table+`","Item":`+small("w", int(seq.Add(1)))+`}`)
				t0 := time.Now()
				c.must(t, req)
				recs[i] = append(recs[i], op{time.Now(), time.Since(t0)})
			}
		}()
	}
	type window struct {
		label    string
		from, to time.Time
	}
	var windows []window
	phase := func(label string, during func() error) {
		w := window{label: label, from: time.Now()}
		err := during()
		w.to = time.Now()
		windows = append(windows, w)
		if err != nil {
			close(stop)
			ww.Wait()
			t.Fatal(err)
		}
	}
	idle := func() error { time.Sleep(15 * time.Second); return nil }
	adm := client.New("http://"+tg.addr, n.Bootstrap().Operator.String())
	repo := filepath.Join(scratch, "repo")
	var full, incr, incr2 client.BackupDone
	time.Sleep(2 * time.Second) // writers warm up
	report := func() {
		t.Logf("| writers (4 conns, PutItem) | seconds | puts/s | p50 ms | p99 ms | max ms |")
		t.Logf("|---|---|---|---|---|---|")
		for _, w := range windows {
			var lat []time.Duration
			for _, r := range recs {
				for _, o := range r {
					if !o.end.Before(w.from) && o.end.Before(w.to) {
						lat = append(lat, o.lat)
					}
				}
			}
			slices.Sort(lat)
			q := func(f float64) float64 {
				if len(lat) == 0 {
					return 0
				}
				return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) / 1000
			}
			sec := w.to.Sub(w.from).Seconds()
			t.Logf("| %s | %.1f | %.0f | %.2f | %.2f | %.1f |", w.label, sec, float64(len(lat))/sec, q(0.5), q(0.99), q(1))
		}
	}
	if rates := os.Getenv("TENANTDB_BACKUP_BENCH_RATES"); rates != "" {
		// Full backups of the same store into new repositories, at each
		// rate in turn (MiB/s, 0 = no limit), three rounds, each after a
		// window without a backup; then writers' puts/s per rate against
		// the windows without.
		var rs []float64
		for _, f := range strings.Split(rates, ",") {
			r, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("TENANTDB_BACKUP_BENCH_RATES=%q: %v", rates, err)
			}
			rs = append(rs, r)
		}
		took := map[float64][]float64{}
		for round := range 3 {
			for _, r := range rs {
				phase("no backup", idle)
				phase(fmt.Sprintf("full backup at %v MiB/s", r), func() error {
					d, err := adm.Backup(ctx, client.BackupRequest{To: filepath.Join(scratch, fmt.Sprintf("repo-%d-%v", round, r)), MaxRate: &r}, nil)
					took[r] = append(took[r], d.Seconds)
					return err
				})
			}
		}
		phase("no backup", idle)
		close(stop)
		ww.Wait()
		report()
		rate := func(w window) float64 {
			k := 0
			for _, r := range recs {
				for _, o := range r {
					if !o.end.Before(w.from) && o.end.Before(w.to) {
						k++
					}
				}
			}
			return float64(k) / w.to.Sub(w.from).Seconds()
		}
		median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
		var base []float64
		per := map[string][]float64{}
		for _, w := range windows {
			if w.label == "no backup" {
				base = append(base, rate(w))
			} else {
				per[w.label] = append(per[w.label], rate(w))
			}
		}
		b := median(base)
		t.Logf("writers without a backup: median %.0f puts/s over %d windows", b, len(base))
		for _, r := range rs {
			label := fmt.Sprintf("full backup at %v MiB/s", r)
			m := median(per[label])
			t.Logf("%s: backup %.1f s (median of %v), writers median %.0f puts/s = %.2f× without", label, median(took[r]), took[r], m, m/b)
		}
		return
	}
	phase("no backup (1)", idle)
	phase("full backup", func() (err error) {
		full, err = adm.Backup(ctx, client.BackupRequest{To: repo}, nil)
		return err
	})
	phase("no backup (2)", idle)
	phase("incremental backup", func() (err error) {
		incr, err = adm.Backup(ctx, client.BackupRequest{To: repo}, nil)
		return err
	})
	phase("no backup (3)", idle)
	phase("incremental backup (2)", func() (err error) {
		incr2, err = adm.Backup(ctx, client.BackupRequest{To: repo}, nil)
		return err
	})
	phase("no backup (4)", idle)
	close(stop)
	ww.Wait()

	r, err := backup.OpenRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	vr, err := r.Verify(incr2.ID, nil)
	if err != nil || len(vr.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
	verifySec := time.Since(t0).Seconds()
	key, err := os.ReadFile(filepath.Join(dataDir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if _, err := r.Restore(backup.RestoreOptions{DataDir: filepath.Join(scratch, "restored"), ServerKeyCheck: incr2.ServerKeyCheck, ServerKey: key}); err != nil {
		t.Fatal(err)
	}
	restoreSec := time.Since(t0).Seconds()
	repoBefore := duBytes(t, repo)
	pr, err := r.Prune(1)
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("| backup | seconds | writes held | files | bytes | new files | new bytes |")
	t.Logf("|---|---|---|---|---|---|---|")
	for _, b := range []struct {
		label string
		d     client.BackupDone
	}{{"full", full}, {"incremental", incr}, {"incremental (2)", incr2}} {
		t.Logf("| %s | %.2f | %.0f ms | %d | %s | %d | %s |", b.label, b.d.Seconds, b.d.HeldSeconds*1000, b.d.Files, human(b.d.Bytes), b.d.Copied, human(b.d.CopiedBytes))
	}
	t.Logf("verify (read and hash every file) %.2f s; restore (verify, copy, sync) %.2f s; repository %s, after prune --keep 1 %s (%d files, %s removed)",
		verifySec, restoreSec, human(repoBefore), human(duBytes(t, repo)), pr.Files, human(pr.Bytes))
	report()
}

// duBytes is the disk space the files under dir take (allocated blocks,
// as du counts; hard links counted once).
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	seen := map[uint64]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
			total += st.Blocks * 512
			return nil
		}
		total += info.Size()
		return nil
	})
	return total
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
