package storage

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// An ApplyNoSync batch is lost by a crash until a later synced write or
// SyncWAL; after either it survives, with everything applied before it.
func TestApplyNoSyncDurableAfterNextSync(t *testing.T) {
	for _, tc := range []struct {
		name    string
		then    func(db *DB) error
		durable bool
	}{
		{"alone", func(*DB) error { return nil }, false},
		{"then SyncWAL", func(db *DB) error { return db.SyncWAL() }, true},
		{"then a synced Apply", func(db *DB) error {
			b := db.NewBatch()
			defer b.Close()
			b.Set([]byte("other"), []byte("x"))
			return db.Apply(b)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			opts := Options{testing: testingKnobs{wrapFS: func(vfs.FS) vfs.FS { return fs }}}
			db := openT(t, "db", opts)
			b := db.NewBatch()
			b.AddCounter([]byte("n"), 7)
			if err := db.ApplyNoSync(b); err != nil {
				t.Fatal(err)
			}
			b.Close()
			if v, err := db.Counter([]byte("n")); err != nil || v != 7 {
				t.Fatalf("before the crash: Counter = %d, %v; want 7 (visible at once)", v, err)
			}
			if err := tc.then(db); err != nil {
				t.Fatal(err)
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{})
			db2 := openT(t, "db", Options{testing: testingKnobs{wrapFS: func(vfs.FS) vfs.FS { return crashed }}})
			v, err := db2.Counter([]byte("n"))
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			if got := v == 7; got != tc.durable {
				t.Fatalf("after the crash: Counter = %d; want durable=%v", v, tc.durable)
			}
		})
	}
}
