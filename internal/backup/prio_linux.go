package backup

import (
	"runtime"
	"syscall"
)

// ioprio_set/ioprio_get (linux/ioprio.h): the best-effort class at its
// lowest level, for the calling thread.
const (
	ioprioWhoProcess = 1
	ioprioClassBE    = 2
	ioprioClassShift = 13
	ioprioLowestBE   = ioprioClassBE<<ioprioClassShift | 7
)

// lowerPriority lowers the disk priority of the calling goroutine's
// thread, which it locks to the goroutine, and returns the function that
// undoes both. Linux I/O schedulers with priorities (bfq; not
// mq-deadline or none) then serve the server's WAL before the backup's
// reads and writes. A failure leaves the priority as it was.
//
// NB: the CPU priority is left alone: a Go thread at a lower nice value
// still holds its P, and a stop-the-world of the garbage collector would
// wait for it to be scheduled; the copy yields its P between chunks
// instead (limiter.wait).
func lowerPriority() func() {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	old, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
	if errno != 0 {
		runtime.UnlockOSThread()
		return func() {}
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioLowestBE); errno != 0 {
		runtime.UnlockOSThread()
		return func() {}
	}
	return func() {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), old); errno != 0 {
			return // NB: stays locked: the thread ends with the goroutine
		}
		runtime.UnlockOSThread()
	}
}
