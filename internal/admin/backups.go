package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Backups writes operator backups of the whole server (the node: it
// holds every store and the keyring).
type Backups interface {
	// Backup writes a backup into the repository dir, calling progress as
	// it advances.
	Backup(ctx context.Context, dir string, progress func(client.BackupProgress)) (client.BackupDone, error)
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
		return h.backupStream(c, b, filepath.Clean(req.To))
	})
}

func (h *Handler) backupStream(c *call, b Backups, dir string) error {
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
	done, err := b.Backup(c.ctx, dir, func(p client.BackupProgress) { write(client.BackupEvent{Progress: &p}) })
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
