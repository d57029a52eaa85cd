package controlplane_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/controlplane"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// Guards' Leases against the real apiserver: only pods that carry the guard may report,
// what they report lives in the operator's namespace, a guard that stops polling drops
// out of status within its Lease's duration, and Leases of deleted pods go.

func leaseOf(t *testing.T, p *corev1.Pod) (*coordinationv1.Lease, error) {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: leaseNS, Name: guards.LeaseName(p.UID)}, l)
	return l, err
}

// counter reads a counter of the manager's registry by one label.
func counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestOnlyPodsThatCarryTheGuardMayReport(t *testing.T) {
	ns := fixture(t)
	injected := map[string]string{"app": "web", guardv1.LabelInjected: "true"}
	// Each pod's service account may mount a token of the control plane's audience: the
	// apiserver binds it to the pod, and nothing but the pod's spec tells a guard's token
	// from an app's.
	mountsToken := func(name string) corev1.Container {
		return corev1.Container{Name: "app", Image: "app",
			VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: "/var/run/secrets/guardrail.dev"}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
	}{{
		name: "an app mounting its own token of the guard's audience, labelled injected and claiming an ack",
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged", Labels: injected,
			Annotations: map[string]string{guardv1.AnnotationEnforced: "web-words=1", guards.AnnotationGuardVerification: "verified"}},
			Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{mountsToken("mine")},
				Volumes: []corev1.Volume{tokenVolume("mine")}}},
	}, {
		name: "the same app without the injected label, which the manager does not cache",
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{mountsToken("mine")},
				Volumes: []corev1.Volume{tokenVolume("mine")}}},
	}, {
		name: "a container named like the guard running another image",
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "impostor", Labels: injected},
			Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{
				Name: guardv1.ContainerName, Image: "registry.test/someone/else:v1", Command: guardCommand,
				VolumeMounts: []corev1.VolumeMount{{Name: guardTokenVolume, MountPath: "/var/run/secrets/guardrail.dev"}}}},
				Volumes: []corev1.Volume{tokenVolume(guardTokenVolume)}}},
	}, {
		name: "the guard with an app that mounts the guard's token too",
		pod: func() *corev1.Pod {
			p := guardedPod(ns, "sharing", injected, nil)
			sidecar := mountsToken(guardTokenVolume)
			sidecar.Name = "sidecar"
			p.Spec.Containers = append(p.Spec.Containers, sidecar)
			return p
		}(),
	}, {
		// Each of these is the injector's guard but for one value a tenant with namespace
		// admin wrote: its token or its provider key would reach the tenant.
		name: "the guard told to subscribe to the tenant's own listener",
		pod: editGuard(guardedPod(ns, "repointed", injected, nil), func(_ *corev1.Pod, g *corev1.Container) {
			g.Args[2] = "--" + guardv1.FlagControlPlane + "=https://tenant-listener.tenant.svc:9444"
		}),
	}, {
		name: "the guard behind the tenant's HTTPS proxy with the tenant's CA",
		pod: editGuard(guardedPod(ns, "proxied", injected, nil), func(_ *corev1.Pod, g *corev1.Container) {
			g.Env = append(g.Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://10.0.0.9:3128"},
				corev1.EnvVar{Name: "SSL_CERT_FILE", Value: "/var/run/guardrail/podinfo/labels"})
		}),
	}, {
		name: "the guard with GODEBUG=http2debug=2, which logs request headers",
		pod: editGuard(guardedPod(ns, "debugged", injected, nil), func(_ *corev1.Pod, g *corev1.Container) {
			g.Env = append(g.Env, corev1.EnvVar{Name: "GODEBUG", Value: "http2debug=2"})
		}),
	}, {
		name: "the guard in a pod whose hostAliases re-point the provider",
		pod: editGuard(guardedPod(ns, "aliased", injected, nil), func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"api.openai.com"}}}
		}),
	}, {
		name: "the guard in a pod that resolves names with the tenant's nameserver",
		pod: editGuard(guardedPod(ns, "resolved", injected, nil), func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.9"}}
		}),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := createPod(t, tc.pod)
			tok := token(t, p, guardv1.Audience)
			refused := counter(t, "guardrail_controlplane_refused_total", "reason", "not_a_guard")
			status, body := poll(t, tok, cp.SubscribeRequest{})
			if status != http.StatusForbidden || !strings.Contains(string(body), "does not carry the guard") {
				t.Errorf("subscribe: %d %q, want 403 saying the pod does not carry the guard", status, body)
			}
			if got := counter(t, "guardrail_controlplane_refused_total", "reason", "not_a_guard"); got != refused+1 {
				t.Errorf("refusals for not_a_guard went from %v to %v, want one more", refused, got)
			}
			batchRefused := counter(t, "guardrail_controlplane_decision_batches_refused_total", "reason", "not_a_guard")
			if status := postDecisions(t, baseURL, tok, cumulative(ns, "inc-1", 5, 0)); status != http.StatusForbidden {
				t.Errorf("decisions: %d, want 403", status)
			}
			if got := counter(t, "guardrail_controlplane_decision_batches_refused_total", "reason", "not_a_guard"); got != batchRefused+1 {
				t.Errorf("refused batches for not_a_guard went from %v to %v, want one more", batchRefused, got)
			}
			if _, err := leaseOf(t, p); !apierrors.IsNotFound(err) {
				t.Errorf("the refused pod has a Lease (err %v)", err)
			}
		})
	}
	time.Sleep(4 * decisionInterval)
	if c := decisionsOf(t, ns, "web-words"); c.WouldBlock != 0 {
		t.Errorf("pods without the guard got %d decisions counted", c.WouldBlock)
	}

	t.Run("a pod that carries the guard subscribes, and its Lease says which pod it is", func(t *testing.T) {
		p := pod(t, ns, "web-1", "web")
		if status, body := waitSnapshot(t, token(t, p, guardv1.Audience)); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		l, err := leaseOf(t, p)
		must(t, err)
		if l.Labels[guardv1.LabelLeasePodNamespace] != ns || l.Annotations[guardv1.AnnotationLeasePod] != "web-1" ||
			l.Annotations[guardv1.AnnotationLeasePodUID] != string(p.UID) || ptr.Deref(l.Spec.HolderIdentity, "") != ns+"/web-1" ||
			ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != int32(leaseDuration/time.Second) || l.Spec.RenewTime == nil {
			t.Errorf("Lease %+v %+v", l.ObjectMeta, l.Spec)
		}
	})
}

// TestAGuardThatStopsPollingDropsOut runs the real guard client: while it polls its Lease
// stays live and the Guardrail says 1/1; once it stops, the Guardrail names its pod as
// not answering within the Lease's duration, without any other event; when it polls
// again, it counts again.
func TestAGuardThatStopsPollingDropsOut(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	must(t, os.WriteFile(tokFile, []byte(token(t, p, guardv1.Audience)), 0o600))
	run := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		c := &cp.Client{URL: baseURL, TokenFile: tokFile, CAFile: caFile, SnapshotDir: dir}
		go c.Run(ctx, func(*policy.Snapshot) error { return nil }, func(error) {})
		return cancel
	}
	stop := run()
	defer func() { stop() }()
	waitEnforced(t, ns, "web-words", "1/1")
	l, err := leaseOf(t, p)
	must(t, err)
	if !strings.Contains(l.Annotations[guardv1.AnnotationEnforced], "web-words=1") {
		t.Errorf("the Lease's acknowledgement %q does not name web-words=1", l.Annotations[guardv1.AnnotationEnforced])
	}
	// Twice the Lease's duration of polling: renewals keep it live.
	time.Sleep(2 * leaseDuration)
	waitEnforced(t, ns, "web-words", "1/1")

	stop()
	stopped := time.Now()
	c := waitReason(t, ns, "web-words", v1alpha1.ReasonGuardsNotAnswering, 3*leaseDuration)
	took := time.Since(stopped)
	t.Logf("a guard that stopped polling dropped out after %v (Lease duration %v)", took, leaseDuration)
	if took > leaseDuration+3*time.Second {
		t.Errorf("dropped out after %v, want within the Lease's duration %v (and a recount)", took, leaseDuration)
	}
	if !strings.Contains(c.Message, "web-1") {
		t.Errorf("the condition does not name the pod: %q", c.Message)
	}
	g := &v1alpha1.Guardrail{}
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web-words"}, g))
	if g.Status.Enforcement.Summary != "0/1" {
		t.Errorf("summary %q, want 0/1", g.Status.Enforcement.Summary)
	}

	stop = run()
	waitEnforced(t, ns, "web-words", "1/1")
}

// waitReason waits until a Guardrail's Enforced condition has reason, and returns it.
func waitReason(t *testing.T, ns, name, reason string, within time.Duration) metav1.Condition {
	t.Helper()
	deadline := time.Now().Add(within)
	g := &v1alpha1.Guardrail{}
	for time.Now().Before(deadline) {
		must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, g))
		for _, c := range g.Status.Conditions {
			if c.Type == v1alpha1.ConditionEnforced && c.Reason == reason {
				return c
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Guardrail %s: conditions %+v; want Enforced with reason %s", name, g.Status.Conditions, reason)
	return metav1.Condition{}
}

func TestARefusalReachesStatusPrintableAndBounded(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	tok := token(t, p, guardv1.Audience)
	_, body := waitSnapshot(t, tok)
	var s cp.Snapshot
	must(t, json.Unmarshal(body, &s))
	refusal := "bad \x1b[31mred\x1b[0m\nline\u202e" + strings.Repeat("x", cp.MaxErrorChars)
	if status, body := poll(t, tok, cp.SubscribeRequest{Refused: &cp.Refusal{Version: s.Version, Error: refusal}}); status != http.StatusNoContent {
		t.Fatalf("a refusal of the current version: %d %s, want 204 after the wait", status, body)
	}
	c := waitReason(t, ns, "web-words", v1alpha1.ReasonSnapshotRefused, 20*time.Second)
	if !strings.Contains(c.Message, "bad [31mred[0m line") {
		t.Errorf("message %q does not carry the refusal without its control characters", c.Message)
	}
	for _, r := range c.Message {
		if !unicode.IsPrint(r) {
			t.Errorf("message %q holds the unprintable %U", c.Message, r)
		}
	}
	if len(c.Message) > 600 {
		t.Errorf("message of %d bytes: the refusal is not bounded", len(c.Message))
	}

	for _, bad := range []cp.SubscribeRequest{
		{Running: strings.Repeat("a", 100)},
		{Running: "v1\nv2"},
		{Refused: &cp.Refusal{Version: "<script>", Error: "x"}},
	} {
		if status, _ := poll(t, tok, bad); status != http.StatusBadRequest {
			t.Errorf("versions %q: %d, want 400", bad.Running+fmt.Sprint(bad.Refused), status)
		}
	}
}

func TestTheLeaseOfADeletedPodIsCollected(t *testing.T) {
	ns := fixture(t)
	ctx := context.Background()
	p := pod(t, ns, "web-1", "web")
	if status, body := poll(t, token(t, p, guardv1.Audience), cp.SubscribeRequest{}); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if _, err := leaseOf(t, p); err != nil {
		t.Fatal(err)
	}
	must(t, k8s.Delete(ctx, p, client.GracePeriodSeconds(0)))
	waitLeaseGone(t, guards.LeaseName(p.UID))

	// A Lease whose pod went while no manager watched: collected when the manager sees it.
	orphan := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: guards.LeaseName("0f0f0f0f-dead"),
		Labels:      map[string]string{guardv1.LabelLeasePodNamespace: ns},
		Annotations: map[string]string{guardv1.AnnotationLeasePod: "gone", guardv1.AnnotationLeasePodUID: "0f0f0f0f-dead"}}}
	must(t, k8s.Create(ctx, orphan))
	waitLeaseGone(t, orphan.Name)
}

func waitLeaseGone(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: leaseNS, Name: name}, &coordinationv1.Lease{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Lease %s was not collected", name)
}

// TestLongPollsOutliveTheReadTimeoutAndSlowBodiesDoNot runs a server whose ReadTimeout is
// shorter than its long-poll wait: a held poll still ends in 204 (on HTTP/1.1 a read
// deadline that passes under a running handler would cancel it), and a client that never
// sends the body it announced is cut off.
func TestLongPollsOutliveTheReadTimeoutAndSlowBodiesDoNot(t *testing.T) {
	ns := fixture(t)
	p := pod(t, ns, "web-1", "web")
	tok := token(t, p, guardv1.Audience)
	_, body := waitSnapshot(t, tok)
	var s cp.Snapshot
	must(t, json.Unmarshal(body, &s))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: k8s.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: install.Cache(),
	})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := serverOpts
	opts.ReadTimeout, opts.Wait = 500*time.Millisecond, 2*time.Second
	srv, err := controlplane.Setup(ctx, mgr, opts)
	must(t, err)
	go func() { _ = mgr.Start(ctx) }()
	url := "https://" + srv.Addr().String()

	hc, err := cp.HTTPClientFor(caFile)
	must(t, err)
	held := func() (int, time.Duration, string) {
		req, err := http.NewRequest(http.MethodPost, url+cp.SubscribePath, strings.NewReader(`{"running":"`+s.Version+`"}`))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("a held poll failed: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, time.Since(start), string(b)
	}
	status, took, answer := held()
	for deadline := time.Now().Add(20 * time.Second); status == http.StatusServiceUnavailable && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // the new manager's cache is not started yet
		status, took, answer = held()
	}
	if status != http.StatusNoContent || took < opts.Wait-100*time.Millisecond {
		t.Errorf("a poll with nothing new: %d %q after %v, want 204 after the wait %v", status, answer, took, opts.Wait)
	}

	pem, err := os.ReadFile(caFile)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	conn, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	must(t, err)
	defer func() { _ = conn.Close() }()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{", cp.SubscribePath, tok)
	must(t, err)
	sent := time.Now()
	must(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	r := bufio.NewReader(conn)
	line, _ := r.ReadString('\n')
	for err == nil {
		_, err = r.ReadString('\n')
	}
	if took := time.Since(sent); took > 5*time.Second {
		t.Errorf("a client that never sends its body held the connection %v (answer %q)", took, line)
	}
	t.Logf("a body that never came: %q, connection closed after %v", strings.TrimSpace(line), time.Since(sent))
}

// editGuard applies edit to p and its guard container.
func editGuard(p *corev1.Pod, edit func(*corev1.Pod, *corev1.Container)) *corev1.Pod {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == guardv1.ContainerName {
			edit(p, &p.Spec.Containers[i])
		}
	}
	return p
}
