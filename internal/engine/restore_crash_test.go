package engine

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/crashtest"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

const (
	restoreCrashEnv   = "TENANTDB_RESTORE_CRASH_CHILD"
	restoreCrashItems = 3000
)

func restoreCrashActor(env *testEnv) testActor {
	a := streamCrashActor(env, 0)
	a.p.Role = tenancy.RoleAdmin
	return a
}

// TestRestoreCrash re-executes the test binary as a child that backs up
// a tenant's view of a table and then, in a loop, restores that backup
// into a new table and takes another backup, printing each once it has
// returned. The parent SIGKILLs it mid-loop and reopens the store: every
// acknowledged restore is a complete table and every acknowledged backup
// complete; the one in flight is either complete or absent, never half.
func TestRestoreCrash(t *testing.T) {
	if dir := os.Getenv(restoreCrashEnv); dir != "" {
		restoreCrashChild(t, dir)
		return
	}
	cmd, out, dir := crashtest.Start(t, restoreCrashEnv)
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	done := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || f[0] != "done" {
			continue
		}
		acked[f[1]] = true
		if done++; done == 5 {
			time.Sleep(time.Duration(time.Now().UnixNano()%40) * time.Millisecond) // mid-restore or mid-backup
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_ = cmd.Wait()
	if done < 5 {
		t.Fatalf("child ended after %d operations", done)
	}

	env := streamCrashEnvOpen(t, dir)
	defer func() { env.e.Close(); env.db.Close() }()
	a := restoreCrashActor(env)
	lt, err := env.e.ListTables(testCtx, a.scope("ListTables"), &wire.ListTablesInput{})
	noErr(t, err)
	restored := 0
	for _, name := range lt.TableNames {
		if !strings.HasPrefix(name, "R") {
			continue
		}
		restored++
		items, _ := scanAll(t, env.e, a.scope("Scan"), wire.ScanInput{TableName: name})
		if len(items) != restoreCrashItems {
			t.Errorf("restored table %s holds %d items, want %d", name, len(items), restoreCrashItems)
		}
		delete(acked, "restore:"+name)
	}
	lb, err := env.e.ListBackups(testCtx, a.scope("ListBackups"), &wire.ListBackupsInput{})
	noErr(t, err)
	for _, s := range lb.BackupSummaries {
		d, err := env.e.DescribeBackup(testCtx, a.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: s.BackupArn})
		noErr(t, err)
		m, err := env.e.readBackup(keyspaceNSOf(a), s.BackupArn[len(s.BackupArn)-backupIDLen:])
		noErr(t, err)
		if s.BackupStatus != "AVAILABLE" || m.Items != restoreCrashItems || d.BackupDescription.BackupDetails.BackupStatus != "AVAILABLE" {
			t.Errorf("backup %s after the crash: %s with %d items", s.BackupName, s.BackupStatus, m.Items)
		}
		delete(acked, "backup:"+s.BackupName)
	}
	for op := range acked {
		t.Errorf("acknowledged %s is gone after the crash", op)
	}
	if restored == 0 {
		t.Error("no restored table: the test means to crash after some restores")
	}
	// The store works on: another restore of the last backup.
	_, err = env.e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{
		TargetTableName: "After", BackupArn: lb.BackupSummaries[len(lb.BackupSummaries)-1].BackupArn})
	noErr(t, err)
}

func keyspaceNSOf(a testActor) []byte {
	lo, _ := keyspaceNS(a)
	return lo
}

func restoreCrashChild(t *testing.T, dir string) {
	env := streamCrashEnvOpen(t, dir)
	env.operator().create(tableInput("Src", false))
	a := restoreCrashActor(env)
	var items []attr.Item
	for i := 0; i < restoreCrashItems; i++ {
		items = append(items, itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%05d"},"v":{"S":"%s"}}`, i, strings.Repeat("x", 200))))
	}
	putItems(t, env.e, a.scope("BatchWriteItem"), "Src", items...)
	for i := 0; ; i++ {
		b, err := env.e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: "Src", BackupName: fmt.Sprintf("b%03d", i)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "backup:", err)
			os.Exit(2)
		}
		fmt.Printf("done backup:b%03d\n", i)
		name := fmt.Sprintf("R%03d", i)
		if _, err := env.e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{
			TargetTableName: name, BackupArn: b.BackupDetails.BackupArn}); err != nil {
			fmt.Fprintln(os.Stderr, "restore:", err)
			os.Exit(2)
		}
		fmt.Printf("done restore:%s\n", name)
	}
}
