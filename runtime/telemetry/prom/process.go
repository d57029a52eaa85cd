//go:build linux

package prom

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// RegisterProcess registers the process's metrics under the names client_golang's process
// collector gives them, read from /proc/self once per scrape:
// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_virtual_memory_max_bytes, process_open_fds, process_max_fds,
// process_start_time_seconds, process_network_receive_bytes_total and
// process_network_transmit_bytes_total (those two count the pod's network namespace, as
// client_golang's do). Where /proc cannot be read it registers nothing.
func RegisterProcess(r *Registry) {
	var p processCollector
	if !p.read() {
		return
	}
	p.start = p.startTime()
	gauge := func(name, help string, v *float64) {
		r.NewGaugeFunc(Opts{Name: name, Help: help}, func() float64 { return *v })
	}
	r.NewCounterFunc(Opts{Name: "process_cpu_seconds_total", Help: "User and system CPU time spent, in seconds."},
		func() float64 { return p.cpu })
	gauge("process_resident_memory_bytes", "Resident memory size in bytes.", &p.rss)
	gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", &p.vsize)
	gauge("process_virtual_memory_max_bytes", "Largest virtual memory size allowed (RLIMIT_AS), in bytes.", &p.maxVsize)
	gauge("process_open_fds", "Open file descriptors.", &p.fds)
	gauge("process_max_fds", "Largest number of open file descriptors allowed (RLIMIT_NOFILE).", &p.maxFds)
	gauge("process_start_time_seconds", "Unix time the process started, in seconds.", &p.start)
	r.NewCounterFunc(Opts{Name: "process_network_receive_bytes_total", Help: "Bytes received in the process's network namespace."},
		func() float64 { return p.rx })
	r.NewCounterFunc(Opts{Name: "process_network_transmit_bytes_total", Help: "Bytes sent in the process's network namespace."},
		func() float64 { return p.tx })
	r.onScrape(func() { p.read() })
}

// userHZ is the unit of /proc's CPU times: fixed at 100 on Linux for user space.
const userHZ = 100

// processCollector holds one scrape's reading of /proc/self. A value that cannot be read
// keeps its last reading.
type processCollector struct {
	cpu, rss, vsize, maxVsize, fds, maxFds, start, rx, tx float64
	// startTicks is the process's start after boot, in 1/userHZ s.
	startTicks float64
}

// read reads the process's values; false when /proc/self/stat cannot be read.
func (p *processCollector) read() bool {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ppid ...: the fields after the command, which may hold spaces.
	f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
	if len(f) < 22 {
		return false
	}
	num := func(i int) float64 { v, _ := strconv.ParseFloat(string(f[i]), 64); return v }
	// Fields 14, 15, 22, 23, 24 of proc(5), f[0] being field 3.
	p.cpu = (num(11) + num(12)) / userHZ
	p.startTicks, p.vsize = num(19), num(20)
	p.rss = num(21) * float64(os.Getpagesize())
	if d, err := os.Open("/proc/self/fd"); err == nil {
		if names, err := d.Readdirnames(-1); err == nil {
			p.fds = float64(len(names))
		}
		_ = d.Close()
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		p.maxFds = float64(lim.Cur)
	}
	if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) == nil {
		p.maxVsize = float64(lim.Cur)
	}
	p.readNetwork()
	return true
}

// readNetwork sums the bytes received and sent over every interface of /proc/self/net/dev:
// two header lines, then "iface: rx_bytes rx_packets ... (8 receive fields) tx_bytes ...".
func (p *processCollector) readNetwork() {
	b, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return
	}
	var rx, tx float64
	for i, line := range bytes.Split(b, []byte("\n")) {
		_, counts, ok := bytes.Cut(line, []byte(":"))
		if i < 2 || !ok {
			continue
		}
		f := bytes.Fields(counts)
		if len(f) < 9 {
			continue
		}
		r, _ := strconv.ParseFloat(string(f[0]), 64)
		t, _ := strconv.ParseFloat(string(f[8]), 64)
		rx, tx = rx+r, tx+t
	}
	p.rx, p.tx = rx, tx
}

// startTime is the Unix time the process started: the boot time (btime of /proc/stat)
// plus the start after boot.
func (p *processCollector) startTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, _ := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return boot + p.startTicks/userHZ
		}
	}
	return 0
}
