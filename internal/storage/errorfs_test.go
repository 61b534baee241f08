package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// injectOn returns a switchable injector that fails operations of the given
// kinds on files matching pattern (filepath.Match on the base name).
func injectOn(pattern string, kinds ...errorfs.OpKind) *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if ok, _ := filepath.Match(pattern, filepath.Base(op.Path)); !ok {
			return nil
		}
		for _, k := range kinds {
			if op.Kind == k {
				return errorfs.ErrInjected
			}
		}
		return nil
	})}
}

func withErrorFS(inj errorfs.Injector) Options {
	var o Options
	o.InMemory = true
	o.testing.wrapFS = func(fs vfs.FS) vfs.FS { return errorfs.Wrap(fs, inj) }
	return o
}

// TestReadErrorIsNotNotFound: a failed read must surface as an error. If it
// became ErrNotFound, a conditional put (attribute_not_exists) would
// overwrite an item that exists.
func TestReadErrorIsNotNotFound(t *testing.T) {
	inj := injectOn("*.sst", errorfs.OpFileReadAt, errorfs.OpFileRead)
	db := openT(t, "db", withErrorFS(inj))
	for i := range 100 {
		apply(t, db, func(b *Batch) { b.Set(fmt.Appendf(nil, "k%03d", i), []byte("v")) })
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}

	inj.On()
	v, err := db.Get([]byte("k050"))
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "injected error") {
		t.Errorf("Get with failing sstable reads = %q, %v; want the injected I/O error", v, err)
	}
	it := db.NewIter(nil, nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if it.Error() == nil {
		t.Errorf("iteration with failing sstable reads saw %d keys and no error", n)
	}
	if err := it.Close(); err == nil {
		t.Error("Iter.Close did not return the iteration error")
	}
	inj.Off()

	if got := mustGet(t, db, "k050"); got != "v" {
		t.Errorf("after the fault cleared, Get = %q, want v", got)
	}
}

// TestWALFailureIsNeverSuccess: when the WAL write or fsync fails, Pebble
// cannot report the error through Apply (its commit pipeline is left
// unusable), so it calls Logger.Fatalf and we exit the process. Here the
// exit is replaced by runtime.Goexit; the test checks that the Apply that
// hit the fault never returned nil and that the fatal path ran.
func TestWALFailureIsNeverSuccess(t *testing.T) {
	inj := injectOn("*.log", errorfs.OpFileWrite, errorfs.OpFileWriteAt,
		errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo)
	var fatal atomic.Value
	opts := withErrorFS(inj)
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.testing.onFatal = func(msg string) {
		fatal.Store(msg)
		runtime.Goexit()
	}
	db, err := Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	// NB: db is deliberately not closed: after a WAL failure Pebble's
	// commit pipeline is unusable, which is why production exits.

	b := db.NewBatch()
	b.Set([]byte("ok"), []byte("1"))
	if err := db.Apply(b); err != nil {
		t.Fatal(err)
	}

	inj.On()
	returned := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := db.NewBatch()
		b.Set([]byte("lost"), []byte("1"))
		returned <- db.Apply(b)
	}()
	<-done

	select {
	case err := <-returned:
		if err == nil {
			t.Fatal("Apply reported success although the WAL write failed")
		}
		t.Logf("Apply returned %v", err) // acceptable, but not what Pebble does today
	default:
		msg, _ := fatal.Load().(string)
		if !strings.Contains(msg, "injected error") {
			t.Fatalf("Apply did not return and the fatal message is %q, want the injected error", msg)
		}
		t.Logf("fatal: %s", msg)
	}
}
