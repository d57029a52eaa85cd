package guardproc

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/telemetry/prom"
)

// AdminLimits bound what a client of the admin listener (/healthz, /readyz, /metrics) can
// hold. The admin port is reachable from the cluster (Prometheus scrapes it, the kubelet
// probes it), so a client there is not trusted: without them 3,000 idle keep-alive
// connections from another namespace were held open for good (15 to 76 MiB, 3,013 fds).
type AdminLimits struct {
	// ReadHeader and Read bound reading a request (the admin routes are GETs without a
	// body); Write bounds writing its answer (/metrics is tens of KiB).
	ReadHeader, Read, Write time.Duration
	// Idle closes a keep-alive connection that sends no next request for this long. It is
	// shorter than usual scrape intervals would need to keep connections: a scraper opens
	// a new connection (or its transport retries on one that closed while idle).
	Idle time.Duration
	// MaxHeaderBytes bounds a request's header, and with it what each connection buffers.
	MaxHeaderBytes int
	// MaxConns caps the connections open at once; a connection over the cap is closed as
	// soon as it is accepted. It is well above what the kubelet's probes (one connection
	// each, no keep-alive) and a few scrapers use.
	MaxConns int
}

// DefaultAdminLimits are the admin listener's limits.
var DefaultAdminLimits = AdminLimits{
	ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 10 * time.Second,
	Idle: 30 * time.Second, MaxHeaderBytes: 16 << 10, MaxConns: 64,
}

// NewAdminServer returns the admin listener's server with lim's timeouts. Serve it on a
// listener capped by CapConns.
func NewAdminServer(h http.Handler, lim AdminLimits) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: lim.ReadHeader, ReadTimeout: lim.Read,
		WriteTimeout: lim.Write, IdleTimeout: lim.Idle, MaxHeaderBytes: lim.MaxHeaderBytes}
}

// CapConns returns ln accepting at most limit connections open at once: one accepted over
// the cap is closed at once and counted in refused. (golang.org/x/net/netutil's
// LimitListener waits instead, leaving the connections over the cap queued in the kernel,
// where a flood keeps the kubelet's probes waiting behind it.)
func CapConns(ln net.Listener, limit int, refused *atomic.Int64) net.Listener {
	return &cappedListener{Listener: ln, slots: make(chan struct{}, limit), refused: refused}
}

type cappedListener struct {
	net.Listener
	slots   chan struct{}
	refused *atomic.Int64
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
		default:
			l.refused.Add(1)
			_ = c.Close()
		}
	}
}

// slotConn gives its slot back when it is closed (the server closes every connection it
// accepted, once or more).
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// RegisterAdminMetrics exports how many connections the admin listener refused over its
// cap: a count that grows is a client holding connections open (AdminLimits).
func RegisterAdminMetrics(reg *prom.Registry, refused *atomic.Int64) {
	reg.NewCounterFunc(prom.Opts{Name: "guard_admin_connections_refused_total",
		Help: "Connections to the admin listener closed at once because it had as many open as it serves."},
		func() float64 { return float64(refused.Load()) })
}
