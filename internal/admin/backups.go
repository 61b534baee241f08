package admin

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/backup"
)

// Backups writes operator backups of the whole server (the node: it
// holds every store and the keyring).
type Backups interface {
	// Backup writes a backup into the repository dir, reading at most
	// maxRate bytes per second (0: no limit), calling progress as it
	// advances.
	Backup(ctx context.Context, dir string, maxRate int64, progress func(client.BackupProgress)) (client.BackupDone, error)
}

// ServeBackups adds POST /v1/backups (operator only): a backup of the
// whole server into a repository on the server's machine. The answer is
// a stream of JSON lines (client.BackupEvent): progress, then the result
// or an error. Every backup, done or failed, is recorded in the platform
// audit log.
func (h *Handler) ServeBackups(b Backups) {
	h.handle("POST /v1/backups", operatorOnly, func(c *call) error {
		var req client.BackupRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		if req.To == "" || !filepath.IsAbs(req.To) {
			return apierr.Validationf("\"to\" must be the absolute path of the backup repository on the server's machine")
		}
		rate := int64(backup.DefaultMaxRate)
		if req.MaxRate != nil {
			r := *req.MaxRate
			if math.IsNaN(r) || r < 0 || r > 1<<20 {
				return apierr.Validationf("\"max_rate_mib\" must be a number of MiB per second from 0 (no limit) to %d, got %v", 1<<20, r)
			}
			rate = int64(r * (1 << 20))
		}
		return h.backupStream(c, b, filepath.Clean(req.To), rate)
	})
}

func (h *Handler) backupStream(c *call, b Backups, dir string, rate int64) error {
	rc := http.NewResponseController(c.w)
	started := false
	write := func(ev client.BackupEvent) {
		if !started {
			c.w.Header().Set("Content-Type", "application/x-ndjson")
			c.w.WriteHeader(http.StatusOK)
			started = true
		}
		// NB: the server's write timeout bounds ordinary answers; a backup
		// takes as long as it takes, so each line gets its own.
		rc.SetWriteDeadline(time.Now().Add(2 * time.Minute))
		line, _ := json.Marshal(ev)
		c.w.Write(append(line, '\n'))
		rc.Flush()
	}
	done, err := b.Backup(c.ctx, dir, rate, func(p client.BackupProgress) { write(client.BackupEvent{Progress: &p}) })
	if err != nil {
		h.recordPlatformOutcome(c, "backup.create", err)
		if !started {
			return err
		}
		var e *apierr.Error
		body := client.ErrorBody{Code: Code(apierr.Internal), Message: "internal server error"}
		if errors.As(err, &e) {
			body = client.ErrorBody{Code: Code(e.Kind), Message: e.Message}
		}
		if apierr.KindOf(err) == apierr.Internal {
			h.log.Error("backup failed", "err", err)
		}
		write(client.BackupEvent{Error: &body})
		return nil
	}
	h.recordPlatform(c, "backup.create", done.Repo+" "+done.ID)
	write(client.BackupEvent{Done: &done})
	return nil
}
