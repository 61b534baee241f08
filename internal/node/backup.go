package node

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/backup"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// nodeBackups writes the node's operator backups (admin.Backups).
type nodeBackups struct{ n *Node }

// openBackups wires operator backups: the registry of the repositories
// this data directory's server wrote, and the destruction of a deleted
// tenant's keys in them.
func (n *Node) openBackups() {
	if n.opts.InMemory {
		return
	}
	n.backups = backup.NewRegistry(n.opts.DataDir)
	n.keys.OnDestroy(n.backups.Shred)
}

// ServerKeyCheck is how a server key is named to operators (`server-key
// show`, backup manifests): hex of the first 8 bytes of its check.
func ServerKeyCheck(check []byte) string { return hex.EncodeToString(check[:8]) }

func (b nodeBackups) Backup(ctx context.Context, dir string, maxRate int64, progress func(client.BackupProgress)) (client.BackupDone, error) {
	n := b.n
	if n.backups == nil {
		return client.BackupDone{}, apierr.Validationf("this server keeps its data in memory: there is nothing to back up")
	}
	if n.remote != nil {
		return client.BackupDone{}, apierr.Validationf("this server is a gateway over a remote engine, which keeps the data: back that up")
	}
	// NB: no server key rotation while the keys are copied: they are
	// all wrapped under the key the manifest names.
	n.skMu.Lock()
	defer n.skMu.Unlock()
	began := time.Now()
	var held time.Duration
	m, err := backup.Create(ctx, backup.CreateOptions{
		Repo:           dir,
		DataDir:        n.opts.DataDir,
		ServerKeyCheck: ServerKeyCheck(n.auth.ServerKey().Check()),
		Checkpoint: func(to string) (keys map[tenancy.TenantID][]byte, err error) {
			st, err := n.engine.Checkpoint(to, func(do func() error) error {
				var err error
				keys, err = n.keys.Freeze(do)
				return err
			})
			held = st.Held
			return keys, err
		},
		MaxRate:  maxRate,
		Live:     n.keys.Stored,
		Progress: func(p backup.Progress) { progress(client.BackupProgress(p)) },
	})
	if err != nil {
		if apierr.KindOf(err) == apierr.Internal {
			if ctx.Err() != nil {
				return client.BackupDone{}, apierr.Wrap(apierr.Internal, err, "the backup was interrupted")
			}
			return client.BackupDone{}, apierr.Wrap(apierr.Internal, err, "%s", apierr.Clip(err.Error()))
		}
		return client.BackupDone{}, err
	}
	return client.BackupDone{ID: m.ID, Repo: dir, Base: m.Base, ServerKeyCheck: m.ServerKeyCheck, Files: len(m.Files), Bytes: m.Bytes,
		Copied: m.Copied, CopiedBytes: m.CopiedBytes, Tenants: len(m.Keys), Seconds: time.Since(began).Seconds(), HeldSeconds: held.Seconds()}, nil
}
