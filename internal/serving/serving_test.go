package serving

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// fakeManager records what is added to it; nothing else of manager.Manager is used.
type fakeManager struct {
	manager.Manager
	mu    sync.Mutex
	added []manager.Runnable
}

func (m *fakeManager) Add(r manager.Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.added = append(m.added, r)
	return nil
}

func (m *fakeManager) GetLogger() logr.Logger { return logr.Discard() }

// start runs what was added until the test ends.
func (m *fakeManager) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.added {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
}

// short are timeouts short enough for a test.
var short = Timeouts{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond, Write: time.Second, Idle: time.Second}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// target is one server under test: how to connect to it and a request it answers.
type target struct {
	name, addr string
	tls        bool
	path       string
}

func (tg target) dial(t *testing.T) net.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var c net.Conn
		var err error
		if tg.tls {
			c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", tg.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test server
		} else {
			c, err = net.DialTimeout("tcp", tg.addr, time.Second)
		}
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", tg.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// closedWithin reads c until the server closes it and fails if that takes longer than
// bound.
func closedWithin(t *testing.T, c net.Conn, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(bound))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open after %v", bound)
	}
	return time.Since(start)
}

func servers(t *testing.T, tm Timeouts) []target {
	t.Helper()
	dir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKeyWithFixtures("127.0.0.1", nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	m := &fakeManager{}
	port := freePort(t)
	wh := WebhookServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}}, tm)
	wh.Register("/mutate", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("ok"))
	}))
	if err := m.Add(wh); err != nil {
		t.Fatal(err)
	}
	plain, secure := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	if err := Metrics(m, metricsserver.Options{BindAddress: plain}, tm); err != nil {
		t.Fatal(err)
	}
	if err := Metrics(m, metricsserver.Options{BindAddress: secure, SecureServing: true, CertDir: t.TempDir()}, tm); err != nil {
		t.Fatal(err)
	}
	probeAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	pm, err := Probes(m, probeAddr, tm)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.AddHealthzCheck("ping", healthz.Ping); err != nil {
		t.Fatal(err)
	}
	if err := pm.AddReadyzCheck("webhook", wh.StartedChecker()); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	return []target{
		{"webhook", "127.0.0.1:" + strconv.Itoa(port), true, "/mutate"},
		{"metrics (HTTP)", plain, false, "/metrics"},
		{"metrics (HTTPS, self-signed)", secure, true, "/metrics"},
		{"probes", probeAddr, false, "/readyz"},
	}
}

// TestServersAnswerAndCutSlowClients: each server answers a request, and closes a
// connection whose request header, or body, stops coming in within its timeouts.
func TestServersAnswerAndCutSlowClients(t *testing.T) {
	for _, tg := range servers(t, short) {
		t.Run(tg.name, func(t *testing.T) {
			c := tg.dial(t)
			defer func() { _ = c.Close() }()
			if _, err := io.WriteString(c, "POST "+tg.path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s answered %d", tg.path, resp.StatusCode)
			}

			c = tg.dial(t)
			defer func() { _ = c.Close() }()
			if _, err := io.WriteString(c, "GET "+tg.path+" HTTP/1.1\r\nHost: x\r\n"); err != nil {
				t.Fatal(err)
			}
			t.Logf("a partial header: closed after %v", closedWithin(t, c, 5*time.Second).Round(time.Millisecond))

			c = tg.dial(t)
			defer func() { _ = c.Close() }()
			if _, err := io.WriteString(c, "POST "+tg.path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
				t.Fatal(err)
			}
			t.Logf("a partial body: closed after %v", closedWithin(t, c, 5*time.Second).Round(time.Millisecond))
		})
	}
}

// TestProbesServeTheManagersChecks: the checks added to the manager Probes returns are
// the probes' — the aggregate and each on its subpath — including checks added while
// the server runs.
func TestProbesServeTheManagersChecks(t *testing.T) {
	m := &fakeManager{}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	pm, err := Probes(m, addr, ProbeTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(pm.AddHealthzCheck("ping", healthz.Ping))
	must(pm.AddReadyzCheck("certificates", func(*http.Request) error { return errors.New("no certificate yet") }))
	m.start(t)
	get := func(path string) (int, string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get("http://" + addr + path) //nolint:noctx // test
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				return resp.StatusCode, string(b)
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/healthz/ping": 200, "/readyz": 500, "/readyz/certificates": 500, "/readyz/other": 404} {
		if code, body := get(path); code != want {
			t.Errorf("GET %s = %d %q, want %d", path, code, body, want)
		}
	}
	must(pm.AddReadyzCheck("late", healthz.Ping))
	if code, body := get("/readyz?verbose=1"); !strings.Contains(body, "late ok") || code != 500 {
		t.Errorf("GET /readyz?verbose=1 = %d %q, want 500 listing the check added late", code, body)
	}
}
