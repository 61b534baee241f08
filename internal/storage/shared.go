package storage

import (
	"runtime"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Shared holds what many small stores opened with Options.Shared share: one
// block cache and one cache of open sstables (so the memory and the file
// descriptors of thousands of stores are bounded together, not per store),
// and, for in-memory stores, their files, so that an in-memory store closed
// and opened again under the same name finds its data (as a store on disk
// does). All methods are safe for concurrent use.
type Shared struct {
	cache *pebble.Cache
	files *pebble.FileCache

	mu  sync.Mutex
	mem map[string]vfs.FS
}

// NewShared returns caches for stores opened with it: a block cache of
// cacheSize bytes (0 means 32 MB) and at most openFiles sstables open at
// once across them (0 means 1,000). Close it after the last of them.
func NewShared(cacheSize int64, openFiles int) *Shared {
	if cacheSize <= 0 {
		cacheSize = 32 << 20
	}
	if openFiles <= 0 {
		openFiles = 1000
	}
	c := pebble.NewCache(cacheSize)
	return &Shared{cache: c, files: pebble.NewFileCache(max(1, runtime.GOMAXPROCS(0)), openFiles), mem: map[string]vfs.FS{}}
}

// Close releases the caches; stores still open keep their references.
func (s *Shared) Close() {
	s.files.Unref()
	s.cache.Unref()
}

// memFS returns the in-memory file system of the store named dir,
// creating it.
func (s *Shared) memFS(dir string) vfs.FS {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.mem[dir]
	if fs == nil {
		fs = vfs.NewMem()
		s.mem[dir] = fs
	}
	return fs
}

// ExistsInMemory reports whether an in-memory store named dir was opened
// with s and not removed since.
func (s *Shared) ExistsInMemory(dir string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.mem[dir]
	return ok
}

// RemoveInMemory forgets the files of the in-memory store named dir (and of
// those whose name starts with dir + "/"). The store must be closed.
func (s *Shared) RemoveInMemory(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.mem {
		if k == dir || len(k) > len(dir) && k[:len(dir)] == dir && k[len(dir)] == '/' {
			delete(s.mem, k)
		}
	}
}
