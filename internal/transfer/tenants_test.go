package transfer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func testJobs(t *testing.T, root string) *Service {
	t.Helper()
	s := &Service{o: Options{Now: time.Now}}
	j, err := openJobs(s, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.jobs = j
	t.Cleanup(j.close)
	return s
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// RemoveTenant removes the tenant's whole tree (every environment, its
// buckets, records and temporary files) and nothing of another tenant's;
// what a crash left in the trash is gone at the next start.
func TestRemoveTenant(t *testing.T) {
	root := t.TempDir()
	a, b := tenancy.TenantID{1}, tenancy.TenantID{2}
	aFiles := []string{
		filepath.Join(root, a.String(), "default", "bkt", "AWSDynamoDB", "01", "data", "x.json.gz"),
		filepath.Join(root, a.String(), "staging", ".tenantdb", "exports", "01.json.tmp"),
	}
	// B's bucket spells A's path inside B's tree.
	bFile := filepath.Join(root, b.String(), "default", a.String(), "default", "bkt", "y.json.gz")
	for _, f := range append(aFiles, bFile) {
		write(t, f)
	}
	s := testJobs(t, root)
	ctx := context.Background()
	if err := s.RemoveTenant(ctx, tenancy.SystemScope(b, "test")); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(root, b.String())) {
		t.Errorf("B's tree is still there")
	}
	for _, f := range aFiles {
		if !exists(f) {
			t.Errorf("removing B removed A's %s", f)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(root, trashDir)); len(ents) != 0 {
		t.Errorf("trash after a removal: %v", ents)
	}
	if err := s.RemoveTenant(ctx, tenancy.SystemScope(b, "test")); err != nil {
		t.Errorf("removing again: %v", err)
	}

	// A crash after the rename: the trash is emptied at the next start.
	left := filepath.Join(root, trashDir, a.String()+".x", "default", "bkt", "z.json.gz")
	write(t, left)
	testJobs(t, root)
	if exists(filepath.Dir(left)) || exists(filepath.Join(root, trashDir)) {
		t.Errorf("a crashed removal's trash survived the start")
	}
	for _, f := range aFiles {
		if !exists(f) {
			t.Errorf("the start removed A's %s", f)
		}
	}
}

// RetireTenant cancels the tenant's holds and waits for them; a retired
// tenant gets no new hold until UnretireTenant; other tenants are not
// touched.
func TestRetireTenant(t *testing.T) {
	s := testJobs(t, t.TempDir())
	j := s.jobs
	a, b := tenancy.TenantID{1}, tenancy.TenantID{2}
	ctxA, releaseA, err := j.hold(a)
	if err != nil {
		t.Fatal(err)
	}
	ctxB, releaseB, err := j.hold(b)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	stopped := make(chan struct{})
	j.run(ctxA, releaseA, fileHold{}, func(ctx context.Context) {
		<-ctx.Done()
		close(stopped)
	})
	s.RetireTenant(a)
	select {
	case <-stopped:
	default:
		t.Fatal("RetireTenant returned before A's job stopped")
	}
	if ctxB.Err() != nil {
		t.Error("retiring A cancelled B's job")
	}
	if _, _, err := j.hold(a); err == nil {
		t.Error("a retired tenant got a hold")
	}
	s.UnretireTenant(a)
	_, release, err := j.hold(a)
	if err != nil {
		t.Fatalf("after UnretireTenant: %v", err)
	}
	release()
}
