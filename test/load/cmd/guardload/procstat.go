package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The harness measures processes through Linux's /proc, as a kubelet's cAdvisor would.

// clockTick is the unit of /proc/<pid>/stat times: USER_HZ, which Linux fixes at 100 for
// user space whatever the kernel's HZ.
const clockTick = 10 * time.Millisecond

// cpuTimes is the CPU time a process has used (all its threads), in user space and in
// the kernel on its behalf.
type cpuTimes struct {
	user, sys time.Duration
}

func (c cpuTimes) total() time.Duration { return c.user + c.sys }

func (c cpuTimes) sub(d cpuTimes) cpuTimes { return cpuTimes{c.user - d.user, c.sys - d.sys} }

func (c cpuTimes) add(d cpuTimes) cpuTimes { return cpuTimes{c.user + d.user, c.sys + d.sys} }

// cpuTime returns the CPU time a process has used.
func cpuTime(pid int) (cpuTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)) //nolint:gosec // a pid, not a path
	if err != nil {
		return cpuTimes{}, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so fields are counted from
// the last ')'.
func parseStatCPU(b []byte) (cpuTimes, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return cpuTimes{}, fmt.Errorf("unexpected /proc stat line %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return cpuTimes{}, fmt.Errorf("unexpected /proc stat line %q", b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return cpuTimes{}, fmt.Errorf("unexpected /proc stat line %q", b)
	}
	return cpuTimes{user: time.Duration(utime) * clockTick, sys: time.Duration(stime) * clockTick}, nil
}

// memory is what /proc/<pid>/status says of a process's resident memory, in bytes.
type memory struct {
	rss, hwm int64
}

func memStatus(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)) //nolint:gosec // a pid, not a path
	if err != nil {
		return memory{}, err
	}
	defer func() { _ = f.Close() }()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			m.rss, err = parseKB(line)
		case strings.HasPrefix(line, "VmHWM:"):
			m.hwm, err = parseKB(line)
		}
		if err != nil {
			return memory{}, err
		}
	}
	return m, sc.Err()
}

// parseKB parses a "Name:   1234 kB" line of /proc/<pid>/status.
func parseKB(line string) (int64, error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[2] != "kB" {
		return 0, fmt.Errorf("unexpected /proc status line %q", line)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	return n << 10, err
}

// machineCPU is the machine's busy and total CPU time from /proc/stat (all CPUs).
type machineCPU struct {
	busy, total time.Duration
}

func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var m machineCPU
	// user nice system idle iowait irq softirq steal [guest guest_nice, already in user]
	for i, s := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("unexpected /proc/stat line %q", line)
		}
		d := time.Duration(n) * clockTick
		m.total += d
		if i != 3 && i != 4 { // idle, iowait
			m.busy += d
		}
	}
	return m, nil
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
