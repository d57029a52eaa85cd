package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
)

// providerCredential is the value of the providers' Secret: it must reach no status.
const providerCredential = "sk-provider-canary-91c2"

// usageWorld is a guard's pod as the manager knows it (cached, its guard verified and
// injected for the providers named), its namespace, the ModelProviders and their Secret,
// and an intake on a fake client that posts through the real handler.
type usageWorld struct {
	c   client.Client
	in  *Intake
	h   http.HandlerFunc
	pod *metav1.PartialObjectMetadata
}

func newUsageWorld(t *testing.T, verified bool, guardProviders []string, providers ...*v1alpha1.ModelProvider) *usageWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	must(t, clientgoscheme.AddToScheme(scheme))
	must(t, v1alpha1.AddToScheme(scheme))
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app", UID: "uid-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	var verification error
	if !verified {
		verification = errors.New("the guard's image is not the operator's")
	}
	guards.SetGuardVerification(cached, verification)
	guards.SetGuardProviders(cached, guardProviders)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"keyless": "true"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "guardrail-system", Name: "keys"},
			Data: map[string][]byte{"apiKey": []byte(providerCredential)}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "guardrail-system", Name: "guard-uid-1"}},
		cached,
	}
	for _, p := range providers {
		objs = append(objs, p)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.ModelProvider{}).WithObjects(objs...).Build()
	in := New(Options{Cache: c, API: c, Writer: c,
		Lease: func(ctx context.Context, _ *metav1.PartialObjectMetadata, _ bool) (*coordinationv1.Lease, error) {
			l := &coordinationv1.Lease{}
			return l, c.Get(ctx, types.NamespacedName{Namespace: "guardrail-system", Name: "guard-uid-1"}, l)
		}})
	pod := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app", UID: "uid-1"}}
	return &usageWorld{c: c, in: in, pod: pod,
		h: in.Handler(func(*http.Request) (*metav1.PartialObjectMetadata, error) { return pod, nil })}
}

// modelProvider is a ModelProvider whose namespaceSelector selects namespaces labelled
// keyless=<selects>.
func modelProvider(name, selects string) *v1alpha1.ModelProvider {
	return &v1alpha1.ModelProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ModelProviderSpec{API: v1alpha1.ProviderAPIOpenAI, URL: "https://api.example.com/v1",
			CredentialsSecretRef: v1alpha1.SecretKeyReference{Name: "keys", Key: "apiKey"},
			NamespaceSelector:    &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"keyless": v1alpha1.LabelValue(selects)}}}}
}

// post sends the guard's batch of cumulative usage through the handler and returns the
// HTTP status.
func (w *usageWorld) post(t *testing.T, started time.Time, usage ...guardv1.ProviderUsage) int {
	t.Helper()
	body, err := json.Marshal(guardv1.DecisionsRequest{Incarnation: "inc-1", Started: started.UnixMilli(), Providers: usage})
	must(t, err)
	rec := httptest.NewRecorder()
	w.h(rec, httptest.NewRequest(http.MethodPost, guardv1.DecisionsPath, bytes.NewReader(body)))
	return rec.Code
}

func (w *usageWorld) provider(t *testing.T, name string) *v1alpha1.ModelProvider {
	t.Helper()
	mp := &v1alpha1.ModelProvider{}
	must(t, w.c.Get(context.Background(), types.NamespacedName{Name: name}, mp))
	return mp
}

// A guard resends its cumulative usage (its answer was lost, or nothing changed): the
// provider's status counts each request and token once, and so do the metrics.
func TestProviderUsageReachesStatusOnceEvenWhenResent(t *testing.T) {
	w := newUsageWorld(t, true, []string{"openai"}, modelProvider("openai", "true"))
	started := time.Now().Add(-time.Minute)
	requests := func() float64 {
		return counter(t, "guardrail_provider_requests_total", map[string]string{"provider": "openai", "namespace": "tenant"})
	}
	inputTokens := func() float64 {
		return counter(t, "guardrail_provider_tokens_total", map[string]string{"provider": "openai", "namespace": "tenant", "direction": "input"})
	}
	requestsBefore, inputBefore := requests(), inputTokens()

	first := guardv1.ProviderUsage{Provider: "openai", Requests: 3, InputTokens: 120, OutputTokens: 40}
	for i := range 3 {
		if code := w.post(t, started, first); code != http.StatusNoContent {
			t.Fatalf("post %d: status %d", i, code)
		}
	}
	w.in.flush(context.Background())
	// A later batch, and then the first one again, arriving late.
	if code := w.post(t, started, guardv1.ProviderUsage{Provider: "openai", Requests: 5, InputTokens: 200, OutputTokens: 70}); code != http.StatusNoContent {
		t.Fatalf("status %d", code)
	}
	if code := w.post(t, started, first); code != http.StatusNoContent {
		t.Fatalf("status %d", code)
	}
	w.in.flush(context.Background())
	w.in.flush(context.Background())

	u := w.provider(t, "openai").Status.Usage
	want := v1alpha1.UsageFigures{Requests: 5, InputTokens: 200, OutputTokens: 70}
	if u == nil || u.UsageFigures != want {
		t.Fatalf("status.usage %+v, want %+v", u, want)
	}
	if len(u.Namespaces) != 1 || u.Namespaces[0].Namespace != "tenant" || u.Namespaces[0].UsageFigures != want || u.OtherNamespaces != nil {
		t.Fatalf("status.usage.namespaces %+v (other %+v), want tenant alone with %+v", u.Namespaces, u.OtherNamespaces, want)
	}
	if got := requests() - requestsBefore; got != 5 {
		t.Errorf("guardrail_provider_requests_total{provider=openai,namespace=tenant} grew by %v, want 5", got)
	}
	if got := inputTokens() - inputBefore; got != 200 {
		t.Errorf("guardrail_provider_tokens_total{direction=input} grew by %v, want 200", got)
	}
	raw, err := json.Marshal(w.provider(t, "openai"))
	must(t, err)
	if strings.Contains(string(raw), providerCredential) {
		t.Fatalf("the provider's credential is in the ModelProvider: %s", raw)
	}
}

// A tenant's guard, injected for openai only, reports usage of a provider it does not use
// and of one that does not select its namespace: the batch is taken (204), its openai
// usage counted, and the forged usage is pending nowhere and counted as not selected.
func TestAForgedProviderUsageIsDroppedByTheHandler(t *testing.T) {
	w := newUsageWorld(t, true, []string{"openai", "restricted"},
		modelProvider("openai", "true"), modelProvider("anthropic", "true"), modelProvider("restricted", "production"))
	dropped := counter(t, "guardrail_controlplane_usage_not_selected_total", nil)
	code := w.post(t, time.Now().Add(-time.Minute),
		guardv1.ProviderUsage{Provider: "openai", Requests: 2, InputTokens: 10},
		guardv1.ProviderUsage{Provider: "anthropic", Requests: 900, InputTokens: 1_000_000},
		guardv1.ProviderUsage{Provider: "restricted", Requests: 900, InputTokens: 1_000_000},
		guardv1.ProviderUsage{Provider: "no-such-provider", Requests: 900})
	if code != http.StatusNoContent {
		t.Fatalf("status %d", code)
	}
	w.in.mu.Lock()
	var pending []string
	for name := range w.in.cur.usage {
		pending = append(pending, name)
	}
	w.in.mu.Unlock()
	if len(pending) != 1 || pending[0] != "openai" {
		t.Fatalf("usage pending for %v, want openai alone", pending)
	}
	if got := counter(t, "guardrail_controlplane_usage_not_selected_total", nil) - dropped; got != 3 {
		t.Errorf("guardrail_controlplane_usage_not_selected_total grew by %v, want 3", got)
	}
	w.in.flush(context.Background())
	for _, name := range []string{"anthropic", "restricted"} {
		if u := w.provider(t, name).Status.Usage; u != nil {
			t.Errorf("%s: forged usage reached status: %+v", name, u)
		}
	}
	if u := w.provider(t, "openai").Status.Usage; u == nil || u.Requests != 2 {
		t.Errorf("openai: status.usage %+v, want 2 requests", u)
	}
}

// A pod whose spec does not carry the guard as the injector renders it has no providers,
// whatever its annotations say: its usage counts nowhere.
func TestUsageOfAPodWithoutAVerifiedGuardIsDropped(t *testing.T) {
	w := newUsageWorld(t, false, []string{"openai"}, modelProvider("openai", "true"))
	if code := w.post(t, time.Now().Add(-time.Minute), guardv1.ProviderUsage{Provider: "openai", Requests: 2}); code != http.StatusNoContent {
		t.Fatalf("status %d", code)
	}
	w.in.flush(context.Background())
	if u := w.provider(t, "openai").Status.Usage; u != nil {
		t.Fatalf("usage of an unverified guard reached status: %+v", u)
	}
}

func TestMalformedUsageRefusesTheBatch(t *testing.T) {
	many := make([]guardv1.ProviderUsage, guardv1.MaxProviders+1)
	for i := range many {
		many[i] = guardv1.ProviderUsage{Provider: fmt.Sprintf("p%d", i), Requests: 1}
	}
	cases := []struct {
		name   string
		usage  []guardv1.ProviderUsage
		status int
	}{
		{"a provider name that is not a ModelProvider's", []guardv1.ProviderUsage{{Provider: "OpenAI Prod", Requests: 1}}, 400},
		{"a provider name with a slash", []guardv1.ProviderUsage{{Provider: "tenant/openai", Requests: 1}}, 400},
		{"an empty provider name", []guardv1.ProviderUsage{{Requests: 1}}, 400},
		{"a provider twice", []guardv1.ProviderUsage{{Provider: "openai", Requests: 1}, {Provider: "openai", Requests: 2}}, 400},
		{"negative requests", []guardv1.ProviderUsage{{Provider: "openai", Requests: -1}}, 400},
		{"negative output tokens", []guardv1.ProviderUsage{{Provider: "openai", OutputTokens: -5}}, 400},
		{"more providers than a guard keeps", many, 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newUsageWorld(t, true, []string{"openai"}, modelProvider("openai", "true"))
			if code := w.post(t, time.Now().Add(-time.Minute), tc.usage...); code != tc.status {
				t.Fatalf("status %d, want %d", code, tc.status)
			}
			w.in.mu.Lock()
			defer w.in.mu.Unlock()
			if len(w.in.cur.usage) != 0 {
				t.Fatalf("a refused batch left usage pending: %v", w.in.cur.usage)
			}
		})
	}
}

func TestImplausibleUsageIsRefusedAndNothingCounted(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	req := func(u guardv1.ProviderUsage) *guardv1.DecisionsRequest {
		return &guardv1.DecisionsRequest{Incarnation: "a", Started: start.UnixMilli(), Providers: []guardv1.ProviderUsage{u}}
	}
	for _, u := range []guardv1.ProviderUsage{
		{Provider: "openai", Requests: math.MaxInt64},
		{Provider: "openai", Requests: 1, OutputTokens: math.MaxInt64},
	} {
		if _, _, err := claim(claimed{}, req(u), start.Add(10*time.Second)); !errors.Is(err, errImplausible) {
			t.Errorf("claim of %+v: %v, want errImplausible", u, err)
		}
	}
	d, _, err := claim(claimed{}, req(guardv1.ProviderUsage{Provider: "openai", Requests: 10, InputTokens: 4_000_000, OutputTokens: 9000}), start.Add(10*time.Second))
	must(t, err)
	if d.providers["openai"] != (usageDelta{requests: 10, input: 4_000_000, output: 9000}) {
		t.Errorf("a plausible batch counted %+v", d.providers["openai"])
	}
}

// The breakdown keeps the namespaces with the most tokens, at most MaxNamespacesListed,
// and the listed ones plus otherNamespaces always sum to the totals.
func TestUsageBreakdownKeepsTheHeaviestNamespaces(t *testing.T) {
	var st v1alpha1.ModelProviderStatus
	n := v1alpha1.MaxNamespacesListed + 10
	for i := range n {
		// ns-00 brings 1 token … ns-29 brings 30, arriving lightest first.
		addUsage(&st, fmt.Sprintf("ns-%02d", i), usageDelta{requests: 1, input: int64(i + 1)})
	}
	addUsage(&st, "ns-29", usageDelta{requests: 1, output: 5})
	u := st.Usage
	if len(u.Namespaces) != v1alpha1.MaxNamespacesListed {
		t.Fatalf("%d namespaces listed, want %d", len(u.Namespaces), v1alpha1.MaxNamespacesListed)
	}
	for _, e := range u.Namespaces {
		if e.Namespace < "ns-10" {
			t.Errorf("%s is listed with %d tokens though 20 namespaces bring more", e.Namespace, tokens(e.UsageFigures))
		}
	}
	sum := v1alpha1.UsageFigures{}
	for _, e := range u.Namespaces {
		addFigures(&sum, e.UsageFigures)
	}
	if u.OtherNamespaces == nil {
		t.Fatal("no otherNamespaces")
	}
	addFigures(&sum, u.OtherNamespaces.UsageFigures)
	if sum != u.UsageFigures || u.Requests != int64(n+1) {
		t.Errorf("listed plus other %+v, totals %+v (want %d requests)", sum, u.UsageFigures, n+1)
	}
	if u.OtherNamespaces.Namespaces != 10 {
		t.Errorf("otherNamespaces.namespaces %d, want the 10 that left the list", u.OtherNamespaces.Namespaces)
	}
}

// counter reads the counter name with exactly labels from the manager's metrics
// registry, as the metrics endpoint serves it; 0 when it has no such series.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			match := true
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					match = false
				}
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Every figure of the wire's ProviderUsage reaches status.usage: a figure added to what a
// guard sends and forgotten here would be claimed on the Lease and counted nowhere.
func TestEveryUsageFigureAGuardSendsReachesStatus(t *testing.T) {
	typ := reflect.TypeOf(guardv1.ProviderUsage{})
	figures := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Int64 {
			continue
		}
		figures++
		var u guardv1.ProviderUsage
		u.Provider = "openai"
		reflect.ValueOf(&u).Elem().Field(i).SetInt(7)
		req := &guardv1.DecisionsRequest{Incarnation: "a", Started: testNow.Add(-time.Minute).UnixMilli(), Providers: []guardv1.ProviderUsage{u}}
		if err := validateBatch(req, "tenant"); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		d, _, err := claim(claimed{}, req, testNow)
		must(t, err)
		var st v1alpha1.ModelProviderStatus
		addUsage(&st, "tenant", d.providers["openai"])
		if st.Usage == nil || st.Usage.UsageFigures == (v1alpha1.UsageFigures{}) {
			t.Errorf("ProviderUsage.%s is accepted but counted nowhere in status.usage", f.Name)
		}
	}
	if figures < 3 {
		t.Fatalf("found %d figures in guardv1.ProviderUsage", figures)
	}
}
