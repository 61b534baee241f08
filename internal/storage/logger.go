package storage

import (
	"fmt"
	"log/slog"
	"os"
)

// fatalLogger adapts slog to Pebble's Logger.
//
// NB: Pebble calls Fatalf when it cannot continue safely — above all when a
// WAL write or sync fails during a commit (pebble.DB.applyInternal: "fatal
// commit error"). If Fatalf returned, that Apply would report success for a
// write that is not durable. So Fatalf never returns: it logs and exits the
// process, as Pebble's default logger and CockroachDB do. Restarting replays
// the WAL, which holds exactly the acknowledged writes.
type fatalLogger struct {
	log *slog.Logger
	// onFatal, set only by tests, replaces os.Exit; it must not return
	// either (tests use runtime.Goexit).
	onFatal func(msg string)
}

func (l *fatalLogger) Infof(format string, args ...any) {
	l.log.Info("pebble: " + fmt.Sprintf(format, args...))
}

func (l *fatalLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l *fatalLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("storage: fatal error, exiting", "err", msg)
	if l.onFatal != nil {
		l.onFatal(msg)
		panic("storage: onFatal returned") // unreachable unless a test hook is wrong
	}
	os.Exit(1)
}
