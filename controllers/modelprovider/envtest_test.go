package modelprovider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// Invalid ModelProviders are refused by the apiserver at apply time, with a message
// naming the field: nothing of them reaches the controller or a guard.
func TestInvalidModelProvidersAreRefusedNamingTheField(t *testing.T) {
	ctx := context.Background()
	manifest := func() map[string]any {
		return map[string]any{"apiVersion": "guardrail.dev/v1alpha1", "kind": "ModelProvider",
			"metadata": map[string]any{"generateName": "invalid-"},
			"spec": map[string]any{"api": "OpenAI", "url": "https://api.openai.com/v1",
				"credentialsSecretRef": map[string]any{"name": "openai-key"}, "namespaceSelector": map[string]any{}}}
	}
	header := func(name string) func(map[string]any) {
		return func(s map[string]any) { s["headers"] = []any{map[string]any{"name": name, "value": "x"}} }
	}
	cases := []struct {
		name   string
		mutate func(spec map[string]any)
		want   []string
	}{
		{"a url with credentials", func(s map[string]any) { s["url"] = "https://user:sk-abc@api.openai.com/v1" },
			[]string{"spec.url", "must not carry credentials"}},
		{"a url with a query", func(s map[string]any) { s["url"] = "https://api.openai.com/v1?api-key=abc" },
			[]string{"spec.url", "must not carry credentials, a query or a fragment"}},
		{"a url with a fragment", func(s map[string]any) { s["url"] = "https://api.openai.com/v1#x" },
			[]string{"spec.url", "a query or a fragment"}},
		{"an ftp url", func(s map[string]any) { s["url"] = "ftp://api.openai.com/v1" },
			[]string{"spec.url", "must be an absolute http or https URL with a host"}},
		{"a url that is a path", func(s map[string]any) { s["url"] = "/v1" },
			[]string{"spec.url", "must be an absolute http or https URL with a host"}},
		{"a url without a host", func(s map[string]any) { s["url"] = "https:///v1" },
			[]string{"spec.url", "must be an absolute http or https URL with a host"}},
		{"a header named Authorization", header("Authorization"), []string{"spec.headers[0].name", "must not be a credential"}},
		{"a header named x-api-key", header("x-api-key"), []string{"spec.headers[0].name", "must not be a credential"}},
		{"a header named X-API-Key in other case", header("X-API-Key"), []string{"spec.headers[0].name", "must not be a credential"}},
		{"a header named api-key, where Azure OpenAI takes a key", header("api-key"), []string{"spec.headers[0].name", "readable by anyone who can read the ModelProvider"}},
		{"a header name with a space", header("OpenAI Project"), []string{"spec.headers[0].name", "should match"}},
		{"a header value with a line break", func(s map[string]any) {
			s["headers"] = []any{map[string]any{"name": "OpenAI-Project", "value": "p\r\nAuthorization: Bearer x"}}
		}, []string{"spec.headers[0].value", "control characters"}},
		{"no namespaceSelector", func(s map[string]any) { delete(s, "namespaceSelector") },
			[]string{"spec.namespaceSelector", "Required value"}},
		{"an api outside the enum", func(s map[string]any) { s["api"] = "Gemini" },
			[]string{"spec.api", "Unsupported value", "OpenAI", "Anthropic"}},
		{"no credentialsSecretRef", func(s map[string]any) { delete(s, "credentialsSecretRef") },
			[]string{"spec.credentialsSecretRef", "Required value"}},
		{"limits without a limit", func(s map[string]any) { s["limits"] = map[string]any{"mode": "Enforce"} },
			[]string{"spec.limits", "set at least one of requestsPerMinute, tokensPerMinute, requestsPerDay and tokensPerDay"}},
		{"a limit of 0", func(s map[string]any) { s["limits"] = map[string]any{"tokensPerMinute": 0} },
			[]string{"spec.limits.tokensPerMinute", "greater than or equal to 1"}},
		{"a negative limit", func(s map[string]any) { s["limits"] = map[string]any{"requestsPerDay": -5} },
			[]string{"spec.limits.requestsPerDay", "greater than or equal to 1"}},
		{"a mode outside the enum", func(s map[string]any) { s["limits"] = map[string]any{"requestsPerMinute": 1, "mode": "Block"} },
			[]string{"spec.limits.mode", "Unsupported value", "Report", "Enforce"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := manifest()
			tc.mutate(m["spec"].(map[string]any))
			u := &unstructured.Unstructured{Object: m}
			err := k8s.Create(ctx, u)
			if err == nil {
				_ = k8s.Delete(ctx, u)
				t.Fatal("the apiserver accepted it")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal %q does not say %q", err.Error(), w)
				}
			}
		})
	}
}

// A ModelProvider waits for its Secret (Reconciling, kstatus InProgress), becomes Ready
// once the Secret of the operator's namespace holds the key, and is no longer Ready when
// the key is emptied; no status field, Event or log line holds the key.
func TestAModelProviderFollowsItsSecretWithoutRevealingIt(t *testing.T) {
	ctx := context.Background()
	mp := newProvider("follows-secret")
	must(t, k8s.Create(ctx, mp))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mp) })
	eventually(t, 20*time.Second, func() error {
		_, ready := readyCondition(t, mp.Name)
		if ready == nil || ready.Reason != v1alpha1.ReasonSecretNotFound || !strings.Contains(ready.Message, operatorNS) {
			return fmt.Errorf("Ready %+v, want SecretNotFound naming %s", ready, operatorNS)
		}
		return nil
	})
	// A Secret of the same name in a tenant's namespace changes nothing.
	ns := tenant(t, nil)
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "follows-secret-key"},
		StringData: map[string]string{"apiKey": canary}}))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: "follows-secret-key"},
		StringData: map[string]string{"apiKey": canary}}
	must(t, k8s.Create(ctx, secret))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	eventually(t, 20*time.Second, func() error {
		cur, ready := readyCondition(t, mp.Name)
		if ready == nil || ready.Status != metav1.ConditionTrue || cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Ready %+v, want True for generation %d", ready, cur.Generation)
		}
		return nil
	})
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	secret.Data = map[string][]byte{"apiKey": {}}
	must(t, k8s.Update(ctx, secret))
	eventually(t, 20*time.Second, func() error {
		_, ready := readyCondition(t, mp.Name)
		if ready == nil || ready.Reason != v1alpha1.ReasonSecretKeyNotFound {
			return fmt.Errorf("Ready %+v, want SecretKeyNotFound", ready)
		}
		return nil
	})

	var evs eventsv1.EventList
	must(t, k8s.List(ctx, &evs))
	var reasons []string
	for _, e := range evs.Items {
		if e.Regarding.Kind != "ModelProvider" || e.Regarding.Name != mp.Name {
			continue
		}
		reasons = append(reasons, e.Reason)
		if strings.Contains(e.Note, canary) {
			t.Errorf("Event %s holds the credential: %s", e.Reason, e.Note)
		}
	}
	if len(reasons) < 2 {
		t.Errorf("Events on the ModelProvider: %v, want its transitions (SecretNotFound, Succeeded, ...)", reasons)
	}
	cur := &v1alpha1.ModelProvider{}
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(mp), cur))
	raw, err := json.Marshal(cur)
	must(t, err)
	if strings.Contains(string(raw), canary) {
		t.Fatalf("the credential is in the ModelProvider: %s", raw)
	}
}

// status.pods and status.namespaces count the running pods whose guard, as the injector
// renders it, names the provider, in the namespaces it selects; labelling another
// namespace in brings its pods in.
func TestAModelProviderCountsThePodsThatUseIt(t *testing.T) {
	ctx := context.Background()
	mp := newProvider("counts-pods")
	must(t, k8s.Create(ctx, mp))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mp) })
	selected := tenant(t, map[string]string{"keyless": "true"})
	later := tenant(t, nil)
	guardedPod(t, selected, "web-1", "counts-pods")
	guardedPod(t, selected, "web-2", "counts-pods", "other-provider")
	guardedPod(t, selected, "uses-another", "other-provider")
	guardedPod(t, later, "web-1", "counts-pods")
	// A pod whose "guard" is not the operator's names the provider in vain.
	podWithGuard(t, selected, "impostor", "registry.test/someone/else:v1", "counts-pods")
	counts := func(pods, namespaces int32) func() error {
		return func() error {
			cur := &v1alpha1.ModelProvider{}
			must(t, k8s.Get(ctx, client.ObjectKeyFromObject(mp), cur))
			if cur.Status.Pods != pods || cur.Status.Namespaces != namespaces {
				return fmt.Errorf("status.pods %d, status.namespaces %d; want %d and %d", cur.Status.Pods, cur.Status.Namespaces, pods, namespaces)
			}
			return nil
		}
	}
	eventually(t, 20*time.Second, counts(2, 1))
	ns := &corev1.Namespace{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: later}, ns))
	ns.Labels = map[string]string{"keyless": "true"}
	must(t, k8s.Update(ctx, ns))
	eventually(t, 20*time.Second, counts(3, 2))
}

// aggregated installs the aggregation roles of config/rbac (the chart renders the same
// rules) and returns the rules the built-in role aggregates from every ClusterRole
// labelled aggregate-to-<role> — what kube-controller-manager's aggregation controller
// writes, which envtest does not run.
func aggregated(t *testing.T, role string) []rbacv1.PolicyRule {
	t.Helper()
	ctx := context.Background()
	f, err := os.Open(filepath.Join(envtestutil.RepoRoot(), "config", "rbac", "aggregate_roles.yaml"))
	must(t, err)
	defer func() { _ = f.Close() }()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var r rbacv1.ClusterRole
		if err := dec.Decode(&r); err != nil {
			break
		}
		if r.Name == "" {
			continue
		}
		if err := k8s.Create(ctx, &r); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	var roles rbacv1.ClusterRoleList
	must(t, k8s.List(ctx, &roles, client.MatchingLabels{"rbac.authorization.k8s.io/aggregate-to-" + role: "true"}))
	var rules []rbacv1.PolicyRule
	for _, r := range roles.Items {
		rules = append(rules, r.Rules...)
	}
	return rules
}

// bind grants user the rules cluster-wide (as a ClusterRoleBinding to the built-in role
// would) and returns a client impersonating them.
func bind(t *testing.T, user string, rules []rbacv1.PolicyRule) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "as-aggregated-for-" + user}, Rules: rules}
	must(t, k8s.Create(ctx, role))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "as-aggregated-for-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	must(t, k8s.Create(ctx, binding))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding); _ = k8s.Delete(context.Background(), role) })
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(as, client.Options{Scheme: k8s.Scheme()})
	must(t, err)
	return c
}

// Tenants' roles as aggregated: admin and edit get nothing of ModelProviders — even
// bound cluster-wide they cannot create one, point one's URL elsewhere or delete one —
// while view reads them (they name a Secret, they hold no key) and still no Secret.
func TestTenantRolesCannotWriteModelProvidersAndViewersReadThem(t *testing.T) {
	ctx := context.Background()
	existing := newProvider("platform-owned")
	must(t, k8s.Create(ctx, existing))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), existing) })
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	for _, role := range []string{"admin", "edit"} {
		alice := bind(t, "alice-"+role, aggregated(t, role))
		forbidden(role+": list ModelProviders", alice.List(ctx, &v1alpha1.ModelProviderList{}))
		forbidden(role+": create a ModelProvider", alice.Create(ctx, newProvider("tenant-made-"+role)))
		forbidden(role+": point a ModelProvider elsewhere", alice.Patch(ctx, existing.DeepCopy(),
			client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"url":"https://attacker.example/v1"}}`))))
		forbidden(role+": delete a ModelProvider", alice.Delete(ctx, existing.DeepCopy()))
	}
	bob := bind(t, "bob-view", aggregated(t, "view"))
	var list v1alpha1.ModelProviderList
	if err := bob.List(ctx, &list); err != nil {
		t.Fatalf("view cannot list ModelProviders: %v", err)
	}
	forbidden("view: update a ModelProvider's status", bob.Status().Update(ctx, existing.DeepCopy()))
	forbidden("view: read the operator's Secrets", bob.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "platform-owned-key"}, &corev1.Secret{}))
}

// The sample (config/samples/keyless) is accepted and, with the Secret its comment says
// to create, becomes Ready.
func TestTheKeylessSampleBecomesReady(t *testing.T) {
	ctx := context.Background()
	f, err := os.Open(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "keyless", "openai.yaml"))
	must(t, err)
	defer func() { _ = f.Close() }()
	var mp v1alpha1.ModelProvider
	must(t, yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&mp))
	must(t, k8s.Create(ctx, &mp))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &mp) })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: mp.Spec.CredentialsSecretRef.Name},
		StringData: map[string]string{mp.Spec.CredentialsSecretRef.Key: canary}}
	must(t, k8s.Create(ctx, secret))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	eventually(t, 20*time.Second, func() error {
		if _, ready := readyCondition(t, mp.Name); ready == nil || ready.Status != metav1.ConditionTrue {
			return fmt.Errorf("the sample ModelProvider is not Ready: %+v", ready)
		}
		return nil
	})
}

// Limits are accepted with any of the four set, each applying to every namespace's use
// separately; the mode defaults to Report, so that a budget is rolled out reported first.
func TestLimitsDefaultToReportMode(t *testing.T) {
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "guardrail.dev/v1alpha1", "kind": "ModelProvider",
		"metadata": map[string]any{"generateName": "limited-"},
		"spec": map[string]any{"api": "OpenAI", "url": "https://api.openai.com/v1",
			"credentialsSecretRef": map[string]any{"name": "openai-key"}, "namespaceSelector": map[string]any{},
			"limits": map[string]any{"tokensPerMinute": 40000, "requestsPerDay": 5000}}}}
	must(t, k8s.Create(ctx, u))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), u) })
	mp := &v1alpha1.ModelProvider{}
	must(t, k8s.Get(ctx, client.ObjectKey{Name: u.GetName()}, mp))
	l := mp.Spec.Limits
	if l == nil || l.Mode != v1alpha1.BudgetModeReport || l.TokensPerMinute == nil || *l.TokensPerMinute != 40000 ||
		l.RequestsPerDay == nil || *l.RequestsPerDay != 5000 || l.RequestsPerMinute != nil || l.TokensPerDay != nil {
		t.Fatalf("spec.limits %+v, want tokensPerMinute 40000, requestsPerDay 5000, mode Report", l)
	}
}
