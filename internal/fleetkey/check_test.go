package fleetkey

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/storage"
)

func newStore(t *testing.T) *kv.Local {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return kv.NewLocal(db)
}

func newKey(t *testing.T) (*auth.ServerKey, []byte) {
	t.Helper()
	m := make([]byte, 32)
	rand.Read(m)
	k, err := auth.NewServerKey(m)
	if err != nil {
		t.Fatal(err)
	}
	return k, m
}

func put(t *testing.T, st Store, k, v []byte) {
	t.Helper()
	var b kv.Batch
	b.Set(k, v)
	if err := st.Apply(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
}

// TestCheck: what a starting gateway is told, by the key it has and the
// state of the fleet's rotation.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	old, _ := newKey(t)
	next, nextM := newKey(t)
	stranger, _ := newKey(t)
	if k, err := Check(ctx, st, old, "", false); err != nil || k != old {
		t.Fatalf("first gateway: %v, %v", k, err)
	}
	if _, err := Check(ctx, st, stranger, "", false); err == nil || !strings.Contains(err.Error(), "sealed under another server key") {
		t.Fatalf("another key: %v", err)
	}
	// A rotation old -> next in progress.
	rec := rotation{ID: "r1", Phase: phaseSwitch, From: checkHex(old), To: checkHex(next)}
	var err error
	if rec.Next, err = sealNext(old, rec.ID, rec.To, nextM); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rec)
	put(t, st, recKey(), data)
	if k, err := Check(ctx, st, old, "", false); err != nil || k != old {
		t.Fatalf("the old key mid-rotation (joins): %v, %v", k, err)
	}
	if _, err := Check(ctx, st, old, "", true); err == nil || !strings.Contains(err.Error(), auth.ServerKeyEnv) {
		t.Fatalf("the old key from the environment mid-rotation: %v", err)
	}
	if _, err := Check(ctx, st, next, "", false); err == nil || !strings.Contains(err.Error(), "still in progress") {
		t.Fatalf("the new key mid-rotation: %v", err)
	}
	if got, _, err := openNext(old, &rec); err != nil || !bytes.Equal(got.Check(), next.Check()) {
		t.Fatalf("the handed-over key: %v", err)
	}
	if _, _, err := openNext(stranger, &rec); err == nil {
		t.Fatal("the handed-over key opens under another key")
	}
	// The rotation ends: the check names next, old is retired, the record
	// is gone.
	put(t, st, keyspace.System(keyspace.SysServerKeyCheck), next.Check())
	put(t, st, retiredKey(old.Check()), []byte(time.Now().UTC().Format(time.RFC3339)))
	var b kv.Batch
	b.Delete(recKey())
	if err := st.Apply(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(ctx, st, old, "", false); err == nil || !strings.Contains(err.Error(), "retired by a server key rotation") {
		t.Fatalf("the old key after the rotation: %v", err)
	}
	if k, err := Check(ctx, st, next, "", false); err != nil || k != next {
		t.Fatalf("the new key after the rotation: %v, %v", k, err)
	}
	// A gateway down since it was handed the new key: its
	// server.key.next becomes its server.key.
	dir := t.TempDir()
	if _, err := auth.WriteNextServerKey(dir, nextM); err != nil {
		t.Fatal(err)
	}
	k, err := Check(ctx, st, old, dir, false)
	if err != nil || !bytes.Equal(k.Check(), next.Check()) {
		t.Fatalf("a gateway with the new key in server.key.next: %v, %v", k, err)
	}
	b2, err := os.ReadFile(filepath.Join(dir, auth.ServerKeyFile))
	if err != nil || strings.TrimSpace(string(b2)) != hex.EncodeToString(nextM) {
		t.Fatalf("server.key after: %v", err)
	}
}
