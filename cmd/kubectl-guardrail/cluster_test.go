package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/controllers/guards"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// runIn runs the plugin in process with args and returns its output and error.
func runIn(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	root := newRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(args)
	err := root.Execute()
	return out.String() + errOut.String(), err
}

// A platform's ClusterGuardrail and a tenant's Guardrails in namespace team-a, with the
// status the operator writes, a pod carrying the guard and the guard's Lease: status and
// explain read them as a user reads them.
func TestStatusAndExplainAgainstTheAPIServer(t *testing.T) {
	env, cfg := envtestutil.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := envtestutil.WriteKubeconfig(env, "admin", kubeconfig); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = api.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	create := func(o client.Object) {
		t.Helper()
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"tier": "tenant"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: defaultOperatorNamespace}},
	} {
		create(ns)
	}
	builtin := spec.ClassifierSpec{Builtin: &spec.BuiltinBackend{Packs: []spec.BuiltinPack{"secrets"}}}
	create(&api.ClusterClassifier{ObjectMeta: metav1.ObjectMeta{Name: "secrets"}, Spec: builtin})
	create(&api.Classifier{ObjectMeta: metav1.ObjectMeta{Name: "secrets", Namespace: "team-a"}, Spec: builtin})
	one := spec.Score(1)
	gspec := func(mode spec.Mode, action spec.Action, phases ...spec.Phase) spec.GuardrailSpec {
		return spec.GuardrailSpec{Mode: mode, ClassifierRef: spec.LocalObjectReference{Name: "secrets"}, Phases: phases,
			Threshold: &one, Action: action, Reason: "No credentials."}
	}
	baseline := &api.ClusterGuardrail{ObjectMeta: metav1.ObjectMeta{Name: "no-credentials"}, Spec: api.ClusterGuardrailSpec{
		GuardrailSpec:     gspec(spec.ModeEnforce, spec.ActionBlock, spec.PhaseInput, spec.PhaseOutput),
		NamespaceSelector: &api.LabelSelector{MatchLabels: map[string]spec.LabelValue{"tier": "tenant"}},
	}}
	create(baseline)
	tenantReport := &api.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "tenant-report", Namespace: "team-a"},
		Spec: gspec(spec.ModeReport, spec.ActionWarn, spec.PhaseInput)}
	tenantReport.Spec.Selector = &api.LabelSelector{MatchLabels: map[string]spec.LabelValue{"app": "chat"}}
	create(tenantReport)
	other := &api.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "batch-only", Namespace: "team-a"},
		Spec: gspec(spec.ModeEnforce, spec.ActionBlock, spec.PhaseOutput)}
	other.Spec.Selector = &api.LabelSelector{MatchLabels: map[string]spec.LabelValue{"app": "batch"}}
	create(other)

	// The status the operator writes.
	now := metav1.Now()
	ready := func(status metav1.ConditionStatus, reason string, gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: api.ConditionReady, Status: status, Reason: reason, Message: "m", LastTransitionTime: now, ObservedGeneration: gen}}
	}
	baseline.Status.Conditions = ready(metav1.ConditionTrue, "Succeeded", 1)
	baseline.Status.Enforcement = &api.EnforcementStatus{SelectedPods: 3, AcknowledgedPods: 3, Summary: "3/3"}
	baseline.Status.Decisions = &api.DecisionCounts{Blocked: 7, Allowed: 40}
	baseline.Status.Namespaces = []api.NamespaceBreakdown{{Namespace: "team-a",
		NamespaceFigures: api.NamespaceFigures{SelectedPods: 1, AcknowledgedPods: 1, Blocked: 2}}}
	tenantReport.Status.Conditions = ready(metav1.ConditionTrue, "Succeeded", 1)
	tenantReport.Status.Enforcement = &api.EnforcementStatus{SelectedPods: 1, AcknowledgedPods: 1, Summary: "1/1"}
	tenantReport.Status.Decisions = &api.DecisionCounts{WouldWarn: 5, WouldBlock: 0}
	other.Status.Conditions = ready(metav1.ConditionFalse, "ClassifierNotReady", 1)
	other.Status.Enforcement = &api.EnforcementStatus{SelectedPods: 2, AcknowledgedPods: 1, PodsWithoutGuard: 1}
	other.Status.Decisions = &api.DecisionCounts{Failed: 3, Redacted: 4}
	for _, o := range []client.Object{baseline, tenantReport, other} {
		if err := k8s.Status().Update(ctx, o); err != nil {
			t.Fatalf("status of %s: %v", o.GetName(), err)
		}
	}

	// A pod carrying the guard, running, and its guard's Lease acknowledging both policies.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "chat-0", Namespace: "team-a", Labels: map[string]string{"app": "chat"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: guardv1.ContainerName, Image: "guard", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
			Containers:     []corev1.Container{{Name: "app", Image: "app"}},
		}}
	create(pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{{Name: guardv1.ContainerName, Ready: true, Image: "guard", ImageID: "x"}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: guards.LeaseName(pod.UID), Namespace: defaultOperatorNamespace,
			Labels:      map[string]string{guardv1.LabelLeasePodNamespace: "team-a"},
			Annotations: map[string]string{guardv1.AnnotationLeasePod: "chat-0", guardv1.AnnotationLeasePodUID: string(pod.UID), guardv1.AnnotationEnforced: "no-credentials=1,tenant-report=1"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("team-a/chat-0"), LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	create(lease)

	t.Run("status across namespaces", func(t *testing.T) {
		out, err := runIn("status", "-A", "--kubeconfig", kubeconfig)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := []string{
			"NAMESPACE   KIND               NAME             MODE      READY   ENFORCED   BLOCKED   REDACTED   WOULD-BLOCK   FAILED   PROBLEMS",
			"*           ClusterGuardrail   no-credentials   Enforce   True    3/3        7         0          0             0",
			"team-a      Guardrail          batch-only       Enforce   False   1/2        0         4          0             3        not Ready (ClassifierNotReady); 1 pods not enforcing generation 1; 1 pods without a guard; 3 evaluations failed",
			"team-a      Guardrail          tenant-report    Report    True    1/1        0         0          0             0",
			"2 enforcing, 1 reporting, 1 need attention",
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("status lacks\n%s\nin\n%s", w, out)
			}
		}
	})

	t.Run("status of one namespace narrows the ClusterGuardrail to it", func(t *testing.T) {
		out, err := runIn("status", "-n", "team-a", "--kubeconfig", kubeconfig, "-o", "json")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var got struct{ Items []statusRow }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if len(got.Items) != 3 {
			t.Fatalf("items: %+v", got.Items)
		}
		cg := got.Items[0]
		if cg.Kind != "ClusterGuardrail" || cg.Namespace != "team-a" || cg.SelectedPods != 1 || cg.Blocked != 2 {
			t.Errorf("the ClusterGuardrail in team-a: %+v", cg)
		}
		// team-b is not selected by the ClusterGuardrail and has no Guardrail.
		out, err = runIn("status", "-n", "team-b", "--kubeconfig", kubeconfig)
		if err != nil || !strings.Contains(out, "No Guardrails or ClusterGuardrails found.") {
			t.Errorf("team-b: %v\n%s", err, out)
		}
	})

	t.Run("explain names both policies, why they select the pod, and the composed rule", func(t *testing.T) {
		out, err := runIn("explain", "pod", "chat-0", "-n", "team-a", "--kubeconfig", kubeconfig)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, w := range []string{
			"Pod:        team-a/chat-0 (Running)",
			"Guard:      injected, ready, Lease " + lease.Name + " live until",
			"Enforcing:  yes, the latest generation of every policy that selects the pod",
			"ClusterGuardrail  no-credentials  Enforce  True   1           1             namespaceSelector tier=tenant matched; selector unset or empty: every injected pod",
			"Guardrail         tenant-report   Report   True   1           1             selector app=chat matched",
			"Guardrail  batch-only  selector: app=batch does not hold",
			"Input     Block   Closed      no-credentials (cluster)  team-a/tenant-report",
			"Output    Block   Closed      no-credentials (cluster)  -",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("explain lacks\n%s\nin\n%s", w, out)
			}
		}
		if strings.Contains(out, "No credentials.") {
			t.Errorf("explain prints a policy's reason:\n%s", out)
		}
	})

	t.Run("explain says when the guard is behind", func(t *testing.T) {
		lease.Annotations[guardv1.AnnotationEnforced] = "no-credentials=1"
		if err := k8s.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
		out, err := runIn("explain", "pod", "chat-0", "-n", "team-a", "--kubeconfig", kubeconfig, "-o", "json")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var ex explanation
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatal(err)
		}
		if ex.Enforcing || !strings.Contains(ex.EnforcingWhy, "does not enforce the latest generation of [Guardrail tenant-report]") {
			t.Errorf("enforcing %v: %s", ex.Enforcing, ex.EnforcingWhy)
		}
		if len(ex.Boundaries) != 2 || ex.Boundaries[0].Categories["github-token"].Action != "Block" {
			t.Errorf("boundaries: %+v", ex.Boundaries)
		}
	})

	t.Run("a missing pod and a cluster without the CRDs say what to do", func(t *testing.T) {
		out, err := runIn("explain", "pod", "nope", "-n", "team-a", "--kubeconfig", kubeconfig)
		if err == nil || !strings.Contains(err.Error(), "pod nope not found in namespace team-a (give the pod's namespace with -n)") {
			t.Errorf("%v\n%s", err, out)
		}
	})
}
