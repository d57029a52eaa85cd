// Package procstat reads what the load harnesses report about the processes they run:
// resident memory and CPU time from /proc, a Prometheus series from a metrics endpoint,
// and a free loopback address to start a process on.
package procstat

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// RSS returns a /proc/<pid>/status memory field (VmRSS, VmHWM, …) in MiB, formatted, or
// "?" when it cannot be read.
func RSS(pid int, field string) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "?"
}

// CPUSeconds returns the user and system CPU time a process used so far.
func CPUSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // clock ticks
}

// Metric reads one series (its name with its labels, as the exposition writes it) from
// http://addr/metrics: 0 when the series is absent, -1 when the endpoint cannot be read.
func Metric(addr, series string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics") //nolint:gosec,noctx // loopback test endpoint
	if err != nil {
		return -1
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// FreeAddr returns a loopback address no one listens on (at the time of the call).
func FreeAddr(ctx context.Context) string {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}
