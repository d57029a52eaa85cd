package clusterguardrail_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// aggregatedAdmin installs the aggregation roles of config/rbac (the chart renders the
// same rules) and returns the rules the built-in admin role aggregates from every
// ClusterRole labelled aggregate-to-admin — what kube-controller-manager's aggregation
// controller writes into admin, which envtest does not run.
func aggregatedAdmin(t *testing.T) []rbacv1.PolicyRule {
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
	must(t, k8s.List(ctx, &roles, client.MatchingLabels{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}))
	var rules []rbacv1.PolicyRule
	for _, r := range roles.Items {
		rules = append(rules, r.Rules...)
	}
	return rules
}

// A tenant with namespace admin — the admin role, as aggregated, bound in its namespace —
// writes Guardrails there and cannot create, change or delete a ClusterGuardrail or a
// ClusterClassifier.
func TestANamespaceAdminCannotTouchClusterBaselines(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t, nil)
	rules := aggregatedAdmin(t)
	// A RoleBinding never grants cluster-scoped objects, but admin and edit are also bound
	// cluster-wide to people who are not cluster admins (a ClusterRoleBinding to edit): the
	// aggregated rules themselves must not write the baselines.
	for _, r := range rules {
		for _, res := range r.Resources {
			if !strings.HasPrefix(res, "cluster") && res != "*" {
				continue
			}
			for _, v := range r.Verbs {
				if v != "get" && v != "list" && v != "watch" && (contains(r.APIGroups, v1alpha1.GroupVersion.Group) || contains(r.APIGroups, "*")) {
					t.Errorf("the aggregated admin role grants %s on %s", v, res)
				}
			}
		}
	}
	must(t, k8s.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin-as-aggregated"}, Rules: rules}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant-admin-as-aggregated"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}}))
	existing := &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "platform-owned"},
		Spec: v1alpha1.ClusterGuardrailSpec{GuardrailSpec: v1alpha1.GuardrailSpec{Mode: v1alpha1.ModeEnforce,
			ClassifierRef: v1alpha1.LocalObjectReference{Name: "x"}, Threshold: ptrTo(v1alpha1.Score(0.5)),
			Action: v1alpha1.ActionBlock, Reason: "no"}}}
	must(t, k8s.Create(ctx, existing))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), existing) })

	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice, err := client.New(as, client.Options{Scheme: k8s.Scheme()})
	must(t, err)

	mine := &v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"},
		Spec: v1alpha1.GuardrailSpec{Mode: v1alpha1.ModeReport, ClassifierRef: v1alpha1.LocalObjectReference{Name: "x"},
			Threshold: ptrTo(v1alpha1.Score(0.5)), Action: v1alpha1.ActionBlock, Reason: "no"}}
	if err := alice.Create(ctx, mine); err != nil {
		t.Fatalf("the namespace admin cannot create a Guardrail in its namespace: %v", err)
	}

	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	mineToo := existing.DeepCopy()
	mineToo.ObjectMeta = metav1.ObjectMeta{Name: "tenant-made"}
	forbidden("create a ClusterGuardrail", alice.Create(ctx, mineToo))
	cur := &v1alpha1.ClusterGuardrail{}
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(existing), cur))
	cur.Spec.Mode = v1alpha1.ModeReport
	forbidden("switch a ClusterGuardrail to Report", alice.Update(ctx, cur))
	forbidden("patch a ClusterGuardrail", alice.Patch(ctx, cur, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"mode":"Report"}}`))))
	forbidden("delete a ClusterGuardrail", alice.Delete(ctx, existing))
	forbidden("create a ClusterClassifier", alice.Create(ctx, &v1alpha1.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "tenant-made"},
		Spec: v1alpha1.ClassifierSpec{Builtin: &v1alpha1.BuiltinBackend{Packs: []v1alpha1.BuiltinPack{v1alpha1.PackPII}}}}))
	forbidden("write a ClusterGuardrail's status", alice.Status().Update(ctx, cur))
}

// Invalid ClusterGuardrails are refused by the apiserver at apply time, with a message
// naming the field.
func TestInvalidClusterGuardrailsAreRefusedNamingTheField(t *testing.T) {
	ctx := context.Background()
	valid := func() *v1alpha1.ClusterGuardrail {
		return &v1alpha1.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{GenerateName: "invalid-"},
			Spec: v1alpha1.ClusterGuardrailSpec{GuardrailSpec: v1alpha1.GuardrailSpec{Mode: v1alpha1.ModeEnforce,
				ClassifierRef: v1alpha1.LocalObjectReference{Name: "x"}, Threshold: ptrTo(v1alpha1.Score(0.5)),
				Action: v1alpha1.ActionBlock, Reason: "no"}}}
	}
	cases := []struct {
		name   string
		mutate func(*v1alpha1.ClusterGuardrail)
		want   []string
	}{
		{"a namespaceSelector In without values", func(g *v1alpha1.ClusterGuardrail) {
			g.Spec.NamespaceSelector = &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "team", Operator: v1alpha1.LabelSelectorOpIn}}}
		}, []string{"spec.namespaceSelector.matchExpressions[0].values", "In and NotIn need at least one value"}},
		{"a namespaceSelector key that is no label key", func(g *v1alpha1.ClusterGuardrail) {
			g.Spec.NamespaceSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"not a key!": "x"}}
		}, []string{"spec.namespaceSelector.matchLabels", "must be a label key"}},
		{"an action without a threshold", func(g *v1alpha1.ClusterGuardrail) { g.Spec.Threshold = nil }, []string{"spec.threshold"}},
		{"an unknown mode", func(g *v1alpha1.ClusterGuardrail) { g.Spec.Mode = "Audit" }, []string{"spec.mode", "Enforce", "Report"}},
		{"Pseudonymize on the Output phase", func(g *v1alpha1.ClusterGuardrail) {
			g.Spec.Action, g.Spec.Phases = v1alpha1.ActionPseudonymize, []v1alpha1.Phase{v1alpha1.PhaseOutput}
		}, []string{"spec.phases", "Pseudonymize"}},
		{"no reason", func(g *v1alpha1.ClusterGuardrail) { g.Spec.Reason = "" }, []string{"spec.reason"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := valid()
			tc.mutate(g)
			err := k8s.Create(ctx, g)
			if err == nil {
				_ = k8s.Delete(ctx, g)
				t.Fatal("the apiserver accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal %q does not say %q", err.Error(), w)
				}
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The shipped sample (config/samples/cluster) is accepted and becomes Ready.
func TestTheSampleBaselineBecomesReady(t *testing.T) {
	ctx := context.Background()
	f, err := os.Open(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "cluster", "no-credentials-baseline.yaml"))
	must(t, err)
	defer func() { _ = f.Close() }()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var c v1alpha1.ClusterClassifier
	var g v1alpha1.ClusterGuardrail
	must(t, dec.Decode(&c))
	must(t, dec.Decode(&g))
	must(t, k8s.Create(ctx, &c))
	must(t, k8s.Create(ctx, &g))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &g); _ = k8s.Delete(context.Background(), &c) })
	eventually(t, 20*time.Second, func() error {
		cur := &v1alpha1.ClusterGuardrail{}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(&g), cur))
		for _, cond := range cur.Status.Conditions {
			if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("the sample ClusterGuardrail is not Ready: %+v", cur.Status.Conditions)
	})
}

// kubectl runs kubectl as a cluster admin of the test's apiserver.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...) //nolint:gosec,noctx // the test's own arguments
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// What a platform engineer reads with kubectl: the columns of `kubectl get
// clusterguardrails` and `kubectl explain` of the cluster fields.
func TestKubectlShowsClusterGuardrails(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl must be on PATH for this test, as for the controllers suite's")
	}
	baseline(t, "no-egrets", "egret")
	ns := tenant(t, map[string]string{"baseline": "no-egrets"})
	tok := token(t, pod(t, ns, "app-0", "web"))
	snap := subscribe(t, tok, hasGuardrail("/no-egrets"))
	post(t, tok, cp.SubscribePath, cp.SubscribeRequest{Running: snap.Version}) // records the ack, then waits for a change
	var out string
	eventually(t, 30*time.Second, func() error {
		out = kubectl(t, "get", "clusterguardrail", "no-egrets", "-o", "wide")
		if !strings.Contains(out, " 1/1 ") {
			return fmt.Errorf("kubectl get shows\n%s", out)
		}
		return nil
	})
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	want := []string{"NAME", "MODE", "CLASSIFIER", "READY", "ENFORCED", "BLOCKED", "REDACTED", "WOULD-BLOCK", "NAMESPACES", "STATUS", "AGE"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("columns %v, want %v", header, want)
	}
	row := strings.Fields(strings.SplitN(out, "\n", 3)[1])
	if row[0] != "no-egrets" || row[1] != "Enforce" || row[2] != "no-egrets-words" || row[3] != "True" || row[4] != "1/1" {
		t.Errorf("row %v", row)
	}
	if got := kubectl(t, "get", "cgr"); !strings.Contains(got, "no-egrets") {
		t.Errorf("the short name cgr lists %q", got)
	}
	explain := kubectl(t, "explain", "clusterguardrail.spec.namespaceSelector")
	if !strings.Contains(explain, "selects the namespaces whose pods this") {
		t.Errorf("kubectl explain clusterguardrail.spec.namespaceSelector:\n%s", explain)
	}
	explain = kubectl(t, "explain", "clusterclassifier.spec.credentialsSecretRef")
	if !strings.Contains(explain, "operator's namespace") {
		t.Errorf("kubectl explain clusterclassifier.spec.credentialsSecretRef:\n%s", explain)
	}
}
