package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NB: /proc/PID/stat reports utime and stime in USER_HZ ticks, which the
// kernel fixes at 100 per second for user space on every architecture Go's
// linux ports run on. The resolution (10 ms) is ample over a run of seconds.
const clockTicks = 100

// ProcCPU returns the user+system CPU time consumed so far by all threads of
// process pid, from /proc/PID/stat. It fails if the process does not exist.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("loadgen: server cpu: %w", err)
	}
	return parseProcStat(string(b))
}

func parseProcStat(s string) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may contain spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("loadgen: malformed /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("loadgen: malformed /proc stat line: %d fields", len(f)+2)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("loadgen: malformed /proc stat utime/stime %q %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// selfCPU returns the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU returns the busy and total CPU time of the whole machine since
// boot, summed over all CPUs, from the first line of /proc/stat.
func machineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseMachineStat(string(b))
}

func parseMachineStat(s string) (busy, total time.Duration, err error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("loadgen: malformed /proc/stat")
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice]:
	// guest time is already included in user and nice.
	var sum, idle uint64
	for i, v := range f[1:] {
		if i >= 8 {
			break
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("loadgen: malformed /proc/stat: %q", v)
		}
		sum += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	tick := time.Second / clockTicks
	return time.Duration(sum-idle) * tick, time.Duration(sum) * tick, nil
}
