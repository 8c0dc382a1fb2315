// Package procstat reads how much CPU a process has used, so a run can
// report server CPU per request next to throughput. It reads /proc and
// getrusage only; it never signals or otherwise touches the process.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// ErrBadStat is returned for a /proc/PID/stat line that does not parse.
var ErrBadStat = errors.New("procstat: malformed stat line")

// userHZ is the unit of utime and stime in /proc/PID/stat. Linux fixes the
// user-visible clock tick at 100 on every architecture Go runs on.
const userHZ = 100

// CPU returns the user+system CPU time process pid has used so far.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return ParseStat(b)
}

// ParseStat extracts utime+stime (fields 14 and 15) from a stat line. The
// command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func ParseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, ErrBadStat
	}
	// After ")": field 3 (state) is the first; utime is field 14, stime 15.
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, ErrBadStat
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, ErrBadStat
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// Self returns the CPU time (user+system) this process has used so far.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
