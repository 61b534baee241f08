package storage

import (
	"fmt"
	"strconv"
	"strings"
)

// CloseIdle flushes the store's memtable, closes it and deletes the WAL
// files Pebble keeps to reuse (each holds 110% of a memtable preallocated
// on disk), so that a closed store takes little more disk than its data.
// It is for a store closed because it is idle: the caller makes sure no
// write can reach it once CloseIdle starts (a write between the flush and
// the close would survive, in the WAL kept, but the point is lost).
// Errors as Flush and Close; a WAL file that cannot be removed is logged.
func (db *DB) CloseIdle() error {
	if err := db.Flush(); err != nil {
		db.Close()
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	// NB: after the flush every WAL but the newest (the live one, empty)
	// is below the store's minimum unflushed log: Pebble would ignore it
	// on open, and delete or recycle it.
	names, err := db.fs.List(db.dir)
	if err != nil {
		db.log.Warn("storage: listing a closed store", "err", err)
		return nil
	}
	newest := int64(-1)
	var logs []int64
	for _, n := range names {
		num, ok := walNum(n)
		if !ok {
			continue
		}
		logs = append(logs, num)
		newest = max(newest, num)
	}
	for _, num := range logs {
		if num == newest {
			continue
		}
		name := db.fs.PathJoin(db.dir, fmt.Sprintf("%06d.log", num))
		if err := db.fs.Remove(name); err != nil {
			db.log.Warn("storage: removing a recycled WAL", "file", name, "err", err)
		}
	}
	return nil
}

// walNum parses a WAL file name (000123.log).
func walNum(name string) (int64, bool) {
	base, ok := strings.CutSuffix(name, ".log")
	if !ok || base == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(base, 10, 64)
	return n, err == nil
}
