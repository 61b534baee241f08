package transfer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// A deleted tenant's files under the export root go with it. The
// lifecycle retires the tenant's jobs first (RetireTenant: its running
// exports and imports are cancelled and waited for, and no request of it
// may start one or write a record any more), then, inside the deletion,
// after its data key is destroyed, RemoveTenant removes <root>/<tenant>:
// its buckets (exports written, files staged for imports), its job
// records and their temporary files.
//
// NB: the removal is one rename of the tenant's directory into
// <root>/.deleted/, synced, and then a RemoveAll of the renamed tree:
// after the rename nothing under the tenant's name remains, and a crash
// during the RemoveAll leaves only the trash, emptied at the next start
// (openJobs). A crash before the rename leaves the tenant deleting, and
// the retried deletion removes the tree.

// trashDir is the export root's directory of deleted tenants' trees on
// their way out. A tenant id is 32 hex digits, so no tenant's tree has
// this name.
const trashDir = ".deleted"

// hold registers work of tenant t on the export root: a request writing
// its records, then the job it starts. It fails once t is retired. The
// context is cancelled when t is retired or the service closes; release
// ends the hold.
func (j *jobs) hold(t tenancy.TenantID) (ctx context.Context, release func(), err error) {
	j.tmu.Lock()
	defer j.tmu.Unlock()
	if j.retired[t] {
		return nil, nil, apierr.New(apierr.AccessDenied, "the tenant is being deleted")
	}
	ctx, cancel := context.WithCancel(j.ctx)
	j.seq++
	id := j.seq
	if j.holds[t] == nil {
		j.holds[t] = map[uint64]context.CancelFunc{}
	}
	j.holds[t][id] = cancel
	return ctx, func() {
		cancel()
		j.tmu.Lock()
		delete(j.holds[t], id)
		if len(j.holds[t]) == 0 {
			delete(j.holds, t)
		}
		j.tcond.Broadcast()
		j.tmu.Unlock()
	}, nil
}

// run runs job in the background under the hold whose context is ctx,
// releasing it when the job returns. The job's context also ends when
// its record's hold h is lost (on a fleet, another gateway took it over).
func (j *jobs) run(ctx context.Context, release func(), h jobHold, job func(context.Context)) {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		defer release()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if lost := h.lost(); lost != nil {
			go func() {
				select {
				case <-lost:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		job(ctx)
	}()
}

// RetireTenant cancels tenant t's running exports and imports of the
// DynamoDB API and waits for them (and for its requests writing job
// records) to stop; until UnretireTenant no request of t starts one. The
// lifecycle calls it before deleting t.
func (s *Service) RetireTenant(t tenancy.TenantID) {
	j := s.jobs
	if j == nil {
		return
	}
	j.tmu.Lock()
	defer j.tmu.Unlock()
	j.retired[t] = true
	for _, cancel := range j.holds[t] {
		cancel()
	}
	for len(j.holds[t]) > 0 {
		j.tcond.Wait()
	}
}

// UnretireTenant lets tenant t start exports and imports again (its
// deletion failed before it began, or a deleted tenant's id was created
// again).
func (s *Service) UnretireTenant(t tenancy.TenantID) {
	if j := s.jobs; j != nil {
		j.tmu.Lock()
		delete(j.retired, t)
		j.tmu.Unlock()
	}
}

// RemoveTenant removes everything the service keeps for the scope's
// tenant under the export root (every environment's buckets, job records
// and temporary files) and, on a gateway fleet, its job records in the
// control plane's store. It is idempotent; without an export root it does
// nothing. The tenant's jobs must be retired first (RetireTenant).
func (s *Service) RemoveTenant(ctx context.Context, sc tenancy.Scope) error {
	if !sc.Valid() || sc.Tenant().IsZero() {
		return apierr.New(apierr.Internal, "transfer: no tenant to remove")
	}
	if s.jobs == nil {
		return ctx.Err()
	}
	if err := s.jobs.rec.removeTenant(ctx, sc.Tenant()); err != nil {
		return err
	}
	return s.jobs.removeTenant(sc.Tenant())
}

func (j *jobs) removeTenant(t tenancy.TenantID) error {
	j.rmu.Lock() // NB: one removal at a time uses (and then removes) the trash
	defer j.rmu.Unlock()
	dir := filepath.Join(j.root, t.String())
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	trash := filepath.Join(j.root, trashDir)
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	gone := filepath.Join(trash, t.String()+"."+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("transfer: removing the tenant's export tree: %w", err)
	}
	if err := syncDir(j.root); err != nil {
		return err
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("transfer: removing the tenant's export tree: %w", err)
	}
	os.Remove(trash)
	return nil
}

// emptyTrash removes what a crash left of deleted tenants' trees.
func (j *jobs) emptyTrash() error {
	if err := os.RemoveAll(filepath.Join(j.root, trashDir)); err != nil {
		return fmt.Errorf("transfer: emptying %s: %w", trashDir, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("transfer: syncing %s: %w", dir, err)
	}
	return nil
}
