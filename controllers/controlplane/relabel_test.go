package controlplane

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// relabelFixture is a namespace "shop" with one Classifier and two Guardrails, web
// (app=web) and api (app=api), read through a client that counts snapshot builds: each
// build reads the Classifier of its Guardrails once.
func relabelFixture(t testing.TB) (client.Client, *atomic.Int64) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	threshold := v1alpha1.Score(0.5)
	guardrail := func(name string) *v1alpha1.Guardrail {
		return &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: 1},
			Spec: v1alpha1.GuardrailSpec{
				Selector:      &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"app": v1alpha1.LabelValue(name)}},
				Mode:          v1alpha1.ModeEnforce,
				ClassifierRef: v1alpha1.LocalObjectReference{Name: "words"},
				Phases:        []v1alpha1.Phase{v1alpha1.PhaseInput},
				Categories:    []string{"banned"}, Threshold: &threshold, Action: v1alpha1.ActionBlock, Reason: "Refused by " + name}}
	}
	builds := &atomic.Int64{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.Classifier{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "words", Generation: 1},
			Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{
				Keywords: []v1alpha1.KeywordRule{{Category: "banned", Words: []string{"flamingo"}}}}}},
		guardrail("web"), guardrail("api"),
	).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1alpha1.Classifier); ok {
				builds.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	return c, builds
}

// relabel is the selection of the pod after its i-th relabel: a new label value every
// time (a tenant bumping an annotation-like label), and every tenth time app=api instead
// of app=web, which changes which Guardrail selects it.
func relabel(i int) (selection, string) {
	app := "web"
	if i%10 == 9 {
		app = "api"
	}
	return selection{labels: labels.Set{"app": app, "rev": strconv.Itoa(i)}}, app
}

// TestRelabellingAPodKeepsSnapshotWorkBounded drives the hub as the server does when a
// tenant relabels one guarded pod 1,000 times: the pod informer touches the namespace,
// the pod's subscriber wakes and asks for its new selection. Whatever the number of
// relabels, the hub holds a snapshot per set of policies the pod was selected by (here
// two), and compiles at most once per relabel — not once per label set the pod ever had,
// for every change.
func TestRelabellingAPodKeepsSnapshotWorkBounded(t *testing.T) {
	c, builds := relabelFixture(t)
	h := newHub((&builder{cache: c, secrets: c}).build, time.Millisecond, logr.Discard(), serverMetrics)
	defer h.stop()
	ctx := context.Background()
	sel, _ := relabel(0)
	_, changed, err := h.get(ctx, "shop", sel)
	if err != nil {
		t.Fatal(err)
	}
	const relabels = 1000
	for i := 1; i <= relabels; i++ {
		h.touch("shop") // the pod informer saw the new labels
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("relabel %d: the subscriber was never woken", i)
		}
		var snap *built
		sel, app := relabel(i)
		snap, changed, err = h.get(ctx, "shop", sel)
		if err != nil {
			t.Fatalf("relabel %d: %v", i, err)
		}
		if want := app + "=1"; snap.enforced != want {
			t.Fatalf("relabel %d: the pod labelled app=%s got %q (excluded %v), want %q", i, app, snap.enforced, snap.excluded, want)
		}
		h.mu.Lock()
		retained := len(h.entries["shop"])
		h.mu.Unlock()
		if retained > 2 {
			t.Fatalf("after %d relabels of one pod the hub holds %d snapshots, want at most 2 (one per set of Guardrails selecting it)", i, retained)
		}
		if n := builds.Load(); n > int64(i)+1 {
			t.Fatalf("after %d relabels of one pod the hub compiled %d snapshots, want at most one per relabel (%d)", i, n, i+1)
		}
	}
	t.Logf("%d relabels: %d snapshot builds", relabels, builds.Load())
}

// BenchmarkRelabel measures what one relabel of a guarded pod costs the hub and the
// builder (fake client, no apiserver): wake, resolve the new labels, rebuild the pod's
// snapshot. go test ./controllers/controlplane -run '^$' -bench Relabel -benchmem
func BenchmarkRelabel(b *testing.B) {
	c, builds := relabelFixture(b)
	h := newHub((&builder{cache: c, secrets: c}).build, time.Microsecond, logr.Discard(), serverMetrics)
	defer h.stop()
	ctx := context.Background()
	sel, _ := relabel(0)
	_, changed, err := h.get(ctx, "shop", sel)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		h.touch("shop")
		<-changed
		sel, app := relabel(i)
		var snap *built
		if snap, changed, err = h.get(ctx, "shop", sel); err != nil {
			b.Fatal(err)
		}
		if !strings.HasPrefix(snap.enforced, app+"=") {
			b.Fatalf("relabel %d got %q", i, snap.enforced)
		}
	}
	b.StopTimer()
	h.mu.Lock()
	b.ReportMetric(float64(len(h.entries["shop"])), "snapshots")
	h.mu.Unlock()
	b.ReportMetric(float64(builds.Load())/float64(b.N), "builds/relabel")
}
