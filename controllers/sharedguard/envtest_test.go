package sharedguard_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/sharedguard"
)

func newSharedGuard(ns, name string, replicas int32) *v1alpha1.SharedGuard {
	return &v1alpha1.SharedGuard{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SharedGuardSpec{Replicas: ptr.To(replicas), PodLabels: map[string]string{"app": "chat"}},
	}
}

func deployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	dep := &appsv1.Deployment{}
	eventually(t, "the shared guard's Deployment", func() error {
		return k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, dep)
	})
	return dep
}

// guardPod creates a pod as the Deployment's ReplicaSet would, from tmpl, and gives it
// the status a kubelet would: running, ready, at ip.
func guardPod(t *testing.T, ns, name, ip string, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace = name, ns
	must(t, k8s.Create(t.Context(), pod))
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}
	must(t, k8s.Status().Update(t.Context(), pod))
	return pod
}

// endpoints are the addresses in the SharedGuard's IPv4 EndpointSlice, with "!" after
// an address not ready.
func endpoints(t *testing.T, ns, name string) ([]string, error) {
	t.Helper()
	slice := &discoveryv1.EndpointSlice{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name + "-ipv4"}, slice); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range slice.Endpoints {
		a := e.Addresses[0]
		if !ptr.Deref(e.Conditions.Ready, false) {
			a += "!"
		}
		out = append(out, a)
	}
	slices.Sort(out)
	return out, nil
}

func ready(t *testing.T, ns, name string) (*metav1.Condition, *v1alpha1.SharedGuard) {
	t.Helper()
	sg := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, sg))
	return meta.FindStatusCondition(sg.Status.Conditions, v1alpha1.ConditionReady), sg
}

// TestSharedGuardRunsTheRenderedGuardBehindItsService: a SharedGuard becomes a
// Deployment of the guard as the injector renders it, listening beyond loopback and with
// no ModelProvider, and a Service with no selector whose EndpointSlice lists the guard
// pods that serve; it is Ready once every replica serves.
func TestSharedGuardRunsTheRenderedGuardBehindItsService(t *testing.T) {
	ns := namespace(t, "sg-basic")
	sg := newSharedGuard(ns, "llm", 1)
	sg.Spec.GeminiUpstream = "http://gemini.internal:8080"
	must(t, k8s.Create(t.Context(), sg))
	dep := deployment(t, ns, "llm")

	if !metav1.IsControlledBy(dep, &v1alpha1.SharedGuard{ObjectMeta: metav1.ObjectMeta{UID: ownerUID(t, ns, "llm")}}) {
		t.Errorf("the Deployment is not controlled by its SharedGuard: %v", dep.OwnerReferences)
	}
	tmpl := dep.Spec.Template
	if len(tmpl.Spec.Containers) != 1 || tmpl.Spec.Containers[0].Name != guardv1.ContainerName {
		t.Fatalf("the pod template's containers are %v, want the guard alone", tmpl.Spec.Containers)
	}
	args := tmpl.Spec.Containers[0].Args
	if !slices.Contains(args, "--gemini-upstream=http://gemini.internal:8080") {
		t.Errorf("spec.geminiUpstream is not the guard's: %v", args)
	}
	if !slices.Contains(args, "--listen=:15080") {
		t.Errorf("the shared guard does not listen on its pod's address: %v", args)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--provider") {
			t.Errorf("the shared guard carries a ModelProvider: %s", a)
		}
	}
	if tmpl.Labels["app"] != "chat" || tmpl.Labels[guardv1.LabelInjected] != "true" || tmpl.Labels[v1alpha1.LabelSharedGuard] != "llm" {
		t.Errorf("pod template labels %v", tmpl.Labels)
	}
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	if err := injection.VerifyGuard(pod, renderer.Guard()); err != nil {
		t.Errorf("the shared guard's pod does not verify: %v", err)
	}

	svc := &corev1.Service{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm"}, svc))
	if svc.Spec.Selector != nil {
		t.Errorf("the Service selects pods itself (%v): any pod labelled like the guard would receive its traffic", svc.Spec.Selector)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != sharedguard.ServicePort {
		t.Errorf("Service ports %v", svc.Spec.Ports)
	}

	cond, sg := ready(t, ns, "llm")
	if cond != nil && cond.Status == metav1.ConditionTrue {
		t.Fatalf("Ready before any guard pod serves: %v", cond)
	}
	if sg.Status.URL != "http://llm."+ns+".svc" {
		t.Errorf("status.url = %q", sg.Status.URL)
	}

	// The ReplicaSet's pod: verified by the manager's cache, so it serves.
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "abc123"
	guardPod(t, ns, "llm-abc123-x1", "10.1.0.5", tmpl)
	eventually(t, "the guard pod in the EndpointSlice", func() error {
		got, err := endpoints(t, ns, "llm")
		if err != nil || !slices.Equal(got, []string{"10.1.0.5"}) {
			return fmt.Errorf("endpoints %v, %v", got, err)
		}
		return nil
	})
	dep = deployment(t, ns, "llm")
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	must(t, k8s.Status().Update(t.Context(), dep))
	eventually(t, "Ready", func() error {
		cond, sg := ready(t, ns, "llm")
		if cond == nil || cond.Status != metav1.ConditionTrue || sg.Status.ReadyReplicas != 1 || sg.Status.Selector != v1alpha1.LabelSharedGuard+"=llm" {
			return fmt.Errorf("Ready %v, status %+v", cond, sg.Status)
		}
		return nil
	})
}

func ownerUID(t *testing.T, ns, name string) types.UID {
	t.Helper()
	sg := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, sg))
	return sg.UID
}

// TestOnlyVerifiedGuardsWithTheTemplatesLabelsReceiveTheServicesTraffic plays a tenant
// who may create pods in the namespace: a pod of its own labelled as the shared guard's,
// and a genuine guard pod labelled to escape a Guardrail, are both kept out of the
// Service's endpoints.
func TestOnlyVerifiedGuardsWithTheTemplatesLabelsReceiveTheServicesTraffic(t *testing.T) {
	ns := namespace(t, "sg-tenant")
	must(t, k8s.Create(t.Context(), newSharedGuard(ns, "llm", 1)))
	tmpl := deployment(t, ns, "llm").Spec.Template
	guardPod(t, ns, "real", "10.2.0.1", tmpl)

	// An app pod labelled like the guard: it would read every prompt sent to the Service.
	impostor := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(tmpl.Labels)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: guardv1.ContainerName, Image: "registry.test/tenant/listener:1", Ports: []corev1.ContainerPort{{ContainerPort: 15080}},
		}}},
	}
	guardPod(t, ns, "impostor", "10.2.0.2", impostor)
	// The rendered guard, but labelled to fall outside a Guardrail selecting app=chat.
	relabelled := *tmpl.DeepCopy()
	relabelled.Labels["app"] = "not-chat"
	guardPod(t, ns, "relabelled", "10.2.0.3", relabelled)
	// The rendered guard with one label more, which a Guardrail may exclude by.
	extra := *tmpl.DeepCopy()
	extra.Labels["tier"] = "exempt"
	guardPod(t, ns, "extra-label", "10.2.0.4", extra)

	eventually(t, "the EndpointSlice", func() error {
		got, err := endpoints(t, ns, "llm")
		if err != nil || !slices.Equal(got, []string{"10.2.0.1"}) {
			return fmt.Errorf("endpoints %v, %v; want only the verified guard with the template's labels", got, err)
		}
		return nil
	})

	// The tenant writes the EndpointSlice (a role that may): it is written back.
	slice := &discoveryv1.EndpointSlice{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm-ipv4"}, slice))
	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.2.0.2"}})
	must(t, k8s.Update(t.Context(), slice))
	eventually(t, "the EndpointSlice written back", func() error {
		got, err := endpoints(t, ns, "llm")
		if err != nil || !slices.Equal(got, []string{"10.2.0.1"}) {
			return fmt.Errorf("endpoints %v, %v", got, err)
		}
		return nil
	})
}

// TestEditsOfTheDeploymentAreWrittenBack: a tenant who adds an environment variable to
// the guard (a proxy, say) or scales it finds the Deployment as the SharedGuard says.
func TestEditsOfTheDeploymentAreWrittenBack(t *testing.T) {
	ns := namespace(t, "sg-edit")
	must(t, k8s.Create(t.Context(), newSharedGuard(ns, "llm", 2)))
	dep := deployment(t, ns, "llm")
	want := dep.Spec.Template.Spec.Containers[0].Args
	dep.Spec.Template.Spec.Containers[0].Env = append(dep.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://tenant.example:3128"})
	dep.Spec.Template.Spec.Containers[0].Args = append(dep.Spec.Template.Spec.Containers[0].Args, "--pass-through=/v1/anything")
	dep.Spec.Replicas = ptr.To[int32](7)
	must(t, k8s.Update(t.Context(), dep))
	eventually(t, "the Deployment written back", func() error {
		dep := deployment(t, ns, "llm")
		if *dep.Spec.Replicas != 2 {
			return fmt.Errorf("replicas %d", *dep.Spec.Replicas)
		}
		return nil
	})
	// A field the rendering leaves unset: the provider's host name re-pointed for the pod.
	dep = deployment(t, ns, "llm")
	dep.Spec.Template.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"api.openai.com"}}}
	must(t, k8s.Update(t.Context(), dep))
	eventually(t, "the hostAliases written back", func() error {
		if h := deployment(t, ns, "llm").Spec.Template.Spec.HostAliases; len(h) > 0 {
			return fmt.Errorf("hostAliases %v", h)
		}
		return nil
	})
	pdb := &policyv1.PodDisruptionBudget{}
	eventually(t, "a PodDisruptionBudget for 2 replicas", func() error {
		return k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm"}, pdb)
	})
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("the PodDisruptionBudget allows %v unavailable, want 1", pdb.Spec.MaxUnavailable)
	}
	eventually(t, "the Deployment written back", func() error {
		dep := deployment(t, ns, "llm")
		c := dep.Spec.Template.Spec.Containers[0]
		for _, e := range c.Env {
			if e.Name == "HTTPS_PROXY" {
				return errors.New("HTTPS_PROXY is still set")
			}
		}
		if !slices.Equal(c.Args, want) || *dep.Spec.Replicas != 2 {
			return fmt.Errorf("args %v, replicas %d", c.Args, *dep.Spec.Replicas)
		}
		return nil
	})
}

// TestANameSomeoneElseUsesIsLeftAlone: a Service of the SharedGuard's name that is not
// its own is not taken over; the SharedGuard says so (Stalled, NameInUse).
func TestANameSomeoneElseUsesIsLeftAlone(t *testing.T) {
	ns := namespace(t, "sg-name")
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Port: 8080}}},
	}
	must(t, k8s.Create(t.Context(), theirs))
	must(t, k8s.Create(t.Context(), newSharedGuard(ns, "llm", 1)))
	eventually(t, "Stalled with NameInUse", func() error {
		cond, _ := ready(t, ns, "llm")
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != sharedguard.ReasonNameInUse || !strings.Contains(cond.Message, "Service named llm") {
			return fmt.Errorf("Ready %v", cond)
		}
		return nil
	})
	svc := &corev1.Service{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm"}, svc))
	if svc.Spec.Selector["app"] != "theirs" || len(svc.OwnerReferences) > 0 {
		t.Errorf("the other Service was changed: %+v", svc)
	}
}

// TestNoSharedGuardInTheOperatorsNamespace: the operator's namespace is never guarded.
func TestNoSharedGuardInTheOperatorsNamespace(t *testing.T) {
	must(t, k8s.Create(t.Context(), newSharedGuard(operatorNS, "llm", 1)))
	eventually(t, "Stalled", func() error {
		cond, _ := ready(t, operatorNS, "llm")
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonInvalidSpec {
			return fmt.Errorf("Ready %v", cond)
		}
		return nil
	})
	err := k8s.Get(t.Context(), types.NamespacedName{Namespace: operatorNS, Name: "llm"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment was created in the operator's namespace: %v", err)
	}
}

// TestInvalidSharedGuardsAreRefusedAtApplyTime: the CRD names the field.
func TestInvalidSharedGuardsAreRefusedAtApplyTime(t *testing.T) {
	ns := namespace(t, "sg-invalid")
	for _, tc := range []struct {
		name  string
		edit  func(*v1alpha1.SharedGuard)
		field string
	}{
		{"operator label", func(sg *v1alpha1.SharedGuard) { sg.Spec.PodLabels[guardv1.LabelInjected] = "true" }, "spec.podLabels"},
		{"sub-domain label", func(sg *v1alpha1.SharedGuard) { sg.Spec.PodLabels["x.guardrail.dev/y"] = "1" }, "spec.podLabels"},
		{"relative upstream", func(sg *v1alpha1.SharedGuard) { sg.Spec.OpenAIUpstream = "api.openai.com" }, "spec.openAIUpstream"},
		{"credentials in upstream", func(sg *v1alpha1.SharedGuard) { sg.Spec.AnthropicUpstream = "https://u:p@api.anthropic.com" }, "spec.anthropicUpstream"},
		{"gemini upstream not a URL", func(sg *v1alpha1.SharedGuard) { sg.Spec.GeminiUpstream = "/v1beta" }, "spec.geminiUpstream"},
		{"zero replicas", func(sg *v1alpha1.SharedGuard) { sg.Spec.Replicas = ptr.To[int32](0) }, "spec.replicas"},
		{"unknown mode", func(sg *v1alpha1.SharedGuard) { sg.Spec.Mode = "Sidecar" }, "spec.mode"},
		{"an upstream in ExtProc mode", func(sg *v1alpha1.SharedGuard) {
			sg.Spec.Mode, sg.Spec.OpenAIUpstream = v1alpha1.SharedGuardModeExtProc, "https://api.openai.com"
		}, "spec.openAIUpstream"},
		{"a Gemini upstream in ExtProc mode", func(sg *v1alpha1.SharedGuard) {
			sg.Spec.Mode, sg.Spec.GeminiUpstream = v1alpha1.SharedGuardModeExtProc, "https://generativelanguage.googleapis.com"
		}, "spec.geminiUpstream"},
		{"the audit log in ExtProc mode", func(sg *v1alpha1.SharedGuard) {
			sg.Spec.Mode, sg.Spec.AuditLog = v1alpha1.SharedGuardModeExtProc, true
		}, "spec.auditLog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sg := newSharedGuard(ns, "bad", 1)
			tc.edit(sg)
			err := k8s.Create(t.Context(), sg)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want Invalid naming %s", err, tc.field)
			}
		})
	}
}

var _ client.Object = &v1alpha1.SharedGuard{}
