package injection

import (
	"context"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// metadataCache serves the pods of a client with their metadata only, as the manager's
// trimmed pod cache does.
type metadataCache struct {
	cache.Cache
	pods client.Reader
}

func (c metadataCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	full := &corev1.Pod{}
	if err := c.pods.Get(ctx, key, full, opts...); err != nil {
		return err
	}
	*obj.(*corev1.Pod) = corev1.Pod{ObjectMeta: full.ObjectMeta}
	return nil
}

func TestEventsClaimInjectionOnlyForAPodThatCarriesTheGuard(t *testing.T) {
	now := time.Now()
	created := func(p *corev1.Pod) *corev1.Pod {
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Second))
		return p
	}
	appImageGuard := newPod(withAppName(guardv1.ContainerName), withLabel(guardv1.LabelInjected, "true"))
	type event struct{ typ, reason, note string }
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []event // note: a substring
	}{
		{"a pod the injector injected gets Injected", created(decide(newPod(), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{}).pod),
			[]event{{"Normal", ReasonInjected, "Injected the guard as a native sidecar"}}},
		{"a pod that only carries the label gets a Warning instead", created(newPod(withLabel(guardv1.LabelInjected, "true"))),
			[]event{{"Warning", ReasonNotInjected, "labelled " + guardv1.LabelInjected + "=true but does not carry the injector's guard: the pod has no container named " + guardv1.ContainerName}}},
		{"a pod whose app container is named like the guard gets a Warning instead", created(appImageGuard),
			[]event{{"Warning", ReasonNotInjected, `runs image "app:1"`}}},
		{"a pod the injector could not inject gets its warning only", created(decide(newPod(), "apps", enabledNS, testConfig(), nil, providerChoice{}).pod),
			[]event{{"Warning", ReasonNotInjected, "the guard was not injected: the operator's CA certificate is not available yet"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.UID = "uid-1"
			c := fake.NewClientBuilder().WithObjects(tc.pod).Build()
			rec := events.NewFakeRecorder(10)
			r := &EventReconciler{Pods: metadataCache{pods: c}, APIReader: c, Guard: testConfig().Guard(),
				Recorder: rec, now: func() time.Time { return now }}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.pod)}); err != nil {
				t.Fatal(err)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events = %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w.typ+" "+w.reason+" ") || !strings.Contains(got[i], w.note) {
					t.Errorf("event %q, want %s %s …%s…", got[i], w.typ, w.reason, w.note)
				}
			}
		})
	}
}
