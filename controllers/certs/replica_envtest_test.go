package certs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// TestAReplicaThatIsNotTheLeaderGetsItsCertificate: every replica serves the webhook and the
// control plane, so every replica must get the serving certificate into its directory —
// including one that never wins the election. (Seen on a real cluster: the second replica of
// the chart stayed unready, its Secret cache started only on the leader.)
func TestAReplicaThatIsNotTheLeaderGetsItsCertificate(t *testing.T) {
	_, cfg := envtestutil.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const ns, lease = "guardrail-system", "guardrail-test-leader"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-cert"}}))
	// Another replica holds the lease for the whole test.
	now := metav1.NewMicroTime(time.Now())
	must(c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("the-other-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now}}))

	dir := t.TempDir()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		LeaderElection:          true,
		LeaderElectionID:        lease,
		LeaderElectionNamespace: ns,
	})
	must(err)
	_, err = Setup(mgr, Options{Namespace: ns, SecretName: "webhook-cert", CertDir: dir, DNSNames: []string{"guardrail-webhook.guardrail-system.svc"}})
	must(err)
	go func() { _ = mgr.Start(ctx) }()

	for {
		if _, err := os.Stat(filepath.Join(dir, CertFile)); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("a replica that is not the leader never got its serving certificate")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var l coordinationv1.Lease
	must(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, &l))
	if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "the-other-replica" {
		t.Fatalf("the test's replica took the lease (%s): the test does not show what it means to", h)
	}
}
