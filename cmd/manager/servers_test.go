package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// runManagerEnv makes the test binary run main() instead of the tests: the manager as
// its command line starts it, servers and all.
const runManagerEnv = "GUARDRAIL_TEST_RUN_MANAGER"

// syncBuffer collects a child's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startManager runs the manager binary's main() with args against the test's apiserver,
// until the test ends.
func startManager(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...) //nolint:gosec,noctx // this test binary; stopped with SIGTERM below
	cmd.Env = append(os.Environ(), runManagerEnv+"=1", "KUBECONFIG="+kubeconfig)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("manager output:\n%s", out.String())
		}
	})
	return out
}

// TestServersCutSlowClients runs the manager as its command line does and opens, to each
// of its controller-runtime servers — the webhook server, the metrics endpoint and the
// health probes — a connection that sends part of a request's header, and one that
// sends a request's header and part of its body: each server closes both within its
// timeouts (internal/serving), not when the client chooses. The bounds are twice the
// timeouts; without any, the partial body holds its connection for good.
func TestServersCutSlowClients(t *testing.T) {
	dir := t.TempDir()
	_, err := envtestutil.ServingCert(dir, "127.0.0.1", "localhost")
	must(t, err)
	metricsAddr, probeAddr, webhookAddr := freeAddress(t), freeAddress(t), freeAddress(t)
	_, webhookPort, err := net.SplitHostPort(webhookAddr)
	must(t, err)
	startManager(t, "--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+probeAddr,
		"--webhook-port="+webhookPort, "--webhook-cert-dir="+dir, "--cert-management=external",
		"--control-plane-bind-address=0", "--operator-namespace=guardrail-system", "--guard-image=guard:test",
		"--native-sidecars=true")

	// The probes answer once every check passes: the webhook server serves by then.
	waitFor(t, "the manager to be ready", func() bool {
		resp, err := http.Get("http://" + probeAddr + "/readyz?verbose=1") //nolint:noctx // test
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "webhook-server ok")
	})

	// The webhook server serves the injector: an AdmissionReview gets its answer.
	pod, err := json.Marshal(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}})
	must(t, err)
	review, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "review-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "default", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: pod}}})
	must(t, err)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test certificate

	resp, err := hc.Post("https://"+webhookAddr+injection.WebhookPath, "application/json", bytes.NewReader(review)) //nolint:noctx // test
	must(t, err)
	answer, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"uid":"review-1"`) {
		t.Fatalf("the webhook answered an AdmissionReview with %d %s", resp.StatusCode, answer)
	}

	for _, s := range []struct {
		name, addr string
		tls        bool
		path       string
		header     time.Duration // its ReadHeaderTimeout
		body       time.Duration // its ReadTimeout
	}{
		{"webhook", webhookAddr, true, injection.WebhookPath, 10 * time.Second, 30 * time.Second},
		{"metrics", metricsAddr, true, "/metrics", 10 * time.Second, 30 * time.Second},
		{"probes", probeAddr, false, "/readyz", 5 * time.Second, 10 * time.Second},
	} {
		dial := func(t *testing.T) net.Conn {
			t.Helper()
			if s.tls {
				c, err := tls.Dial("tcp", s.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test certificate
				must(t, err)
				return c
			}
			c, err := net.Dial("tcp", s.addr) //nolint:noctx // test
			must(t, err)
			return c
		}
		t.Run(s.name+": a partial header", func(t *testing.T) {
			t.Parallel()
			c := dial(t)
			defer func() { _ = c.Close() }()
			_, err := io.WriteString(c, "GET "+s.path+" HTTP/1.1\r\nHost: localhost\r\nUser-Agent: slow")
			must(t, err)
			t.Logf("closed after %v", closedWithin(t, c, 2*s.header))
		})
		t.Run(s.name+": a partial body", func(t *testing.T) {
			t.Parallel()
			c := dial(t)
			defer func() { _ = c.Close() }()
			_, err := io.WriteString(c, "POST "+s.path+" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
				"Content-Length: 4096\r\n\r\n{\"kind\":")
			must(t, err)
			t.Logf("closed after %v", closedWithin(t, c, 2*s.body))
		})
	}
}

// closedWithin reads c, discarding what the server answers, until the server closes it,
// and fails if that takes longer than bound.
func closedWithin(t *testing.T, c net.Conn, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	must(t, c.SetReadDeadline(start.Add(bound)))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open after %v", bound)
	}
	return time.Since(start).Round(time.Millisecond)
}
