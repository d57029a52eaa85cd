package sharedguard_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	"github.com/guardrail-dev/guardrail-operator/controllers/sharedguard"
	"github.com/guardrail-dev/guardrail-operator/test/envtestutil"
)

// TestExtProcSharedGuardRunsTheProcessorBehindItsService: a SharedGuard in ExtProc mode
// becomes a Deployment of the Envoy external processor as the operator renders it (the
// processor's image, gRPC on the pod's address, its policy from the control plane, no
// provider), a selector-less Service whose port is grpc (15081, h2c), and an EndpointSlice
// that lists only the verified processor pods with that port; it is Ready once every
// replica serves, and its mode cannot be changed.
func TestExtProcSharedGuardRunsTheProcessorBehindItsService(t *testing.T) {
	ns := namespace(t, "sg-extproc")
	sg := newSharedGuard(ns, "gw", 1)
	sg.Spec.Mode = v1alpha1.SharedGuardModeExtProc
	sg.Spec.PodLabels = map[string]string{"app": "gateway"}
	must(t, k8s.Create(t.Context(), sg))
	dep := deployment(t, ns, "gw")

	tmpl := dep.Spec.Template
	if len(tmpl.Spec.Containers) != 1 || len(tmpl.Spec.InitContainers) != 0 {
		t.Fatalf("the pod template's containers are %v, want the processor alone", tmpl.Spec.Containers)
	}
	c := tmpl.Spec.Containers[0]
	if c.Name != guardv1.ContainerName || c.Image != extProcImage || !slices.Equal(c.Command, []string{"/guard-extproc"}) {
		t.Errorf("container %s runs %s %v, want the processor's image and command", c.Name, c.Image, c.Command)
	}
	if !slices.Contains(c.Args, "--listen=:15081") || !slices.Contains(c.Args, "--control-plane="+injection.DefaultControlPlaneURL(operatorNS)) ||
		!slices.Contains(c.Args, "--token-file="+guardv1.TokenPath) || !slices.Contains(c.Args, "--ca-file="+guardv1.CAPath) {
		t.Errorf("the processor does not listen on its pod's address or get its policy from the control plane: %v", c.Args)
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--provider") || strings.Contains(a, "upstream") {
			t.Errorf("the processor carries %s: the gateway calls the provider", a)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "grpc" && p.ContainerPort == 15081 }) {
		t.Errorf("ports %v, want grpc 15081", c.Ports)
	}
	if tmpl.Labels["app"] != "gateway" || tmpl.Labels[guardv1.LabelInjected] != "true" || tmpl.Labels[v1alpha1.LabelSharedGuard] != "gw" ||
		tmpl.Labels[v1alpha1.LabelSharedGuardMode] != "ExtProc" {
		t.Errorf("pod template labels %v", tmpl.Labels)
	}
	if err := injection.VerifyGuard(&corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}, renderer.Guard()); err != nil {
		t.Errorf("the processor's pod does not verify: %v", err)
	}

	svc := &corev1.Service{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw"}, svc))
	if svc.Spec.Selector != nil {
		t.Errorf("the Service selects pods itself (%v)", svc.Spec.Selector)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "grpc" || svc.Spec.Ports[0].Port != sharedguard.ExtProcServicePort ||
		svc.Spec.Ports[0].TargetPort.IntValue() != 15081 || ptr.Deref(svc.Spec.Ports[0].AppProtocol, "") != "kubernetes.io/h2c" {
		t.Errorf("Service ports %+v, want grpc 15081 with appProtocol kubernetes.io/h2c", svc.Spec.Ports)
	}
	cond, got := ready(t, ns, "gw")
	if cond != nil && cond.Status == metav1.ConditionTrue {
		t.Fatalf("Ready before any processor pod serves: %v", cond)
	}
	if got.Status.URL != "http://gw."+ns+".svc:15081" {
		t.Errorf("status.url = %q", got.Status.URL)
	}

	// The ReplicaSet's pod, verified by the manager's cache: it serves.
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "abc123"
	guardPod(t, ns, "gw-abc123-x1", "10.3.0.5", tmpl)
	// A tenant's pod labelled as the processor's and declaring port grpc: not verified.
	mimic := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(tmpl.Labels)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: guardv1.ContainerName, Image: "registry.test/tenant/extproc:1", Command: []string{"/guard-extproc"},
			Ports: []corev1.ContainerPort{{Name: "grpc", ContainerPort: 15081}},
		}}},
	}
	guardPod(t, ns, "mimic", "10.3.0.6", mimic)
	// The processor as rendered, with a ModelProvider added: not verified.
	keyed := *tmpl.DeepCopy()
	keyed.Spec.Containers[0].Args = append(keyed.Spec.Containers[0].Args, "--provider=openai-prod")
	guardPod(t, ns, "keyed", "10.3.0.7", keyed)
	// A genuine Proxy-mode guard, as a Proxy SharedGuard of the same name deleted just
	// before left it: verified, but it serves HTTP, not gRPC, and lacks the mode's label.
	proxyTmpl, _, err := renderer.SharedGuardPod(map[string]string{"app": "gateway", v1alpha1.LabelSharedGuard: "gw"}, nil)
	must(t, err)
	guardPod(t, ns, "proxy", "10.3.0.8", proxyTmpl)
	// The same, labelled exactly as the processor's pods, mode included: verified, but
	// the manager's cache knows it for the proxy, which does not listen on port grpc.
	proxyTmpl.Labels = maps.Clone(tmpl.Labels)
	guardPod(t, ns, "proxy-relabelled", "10.3.0.9", proxyTmpl)

	eventually(t, "only the processor pod in the EndpointSlice, on port grpc", func() error {
		got, err := endpoints(t, ns, "gw")
		if err != nil || !slices.Equal(got, []string{"10.3.0.5"}) {
			return fmt.Errorf("endpoints %v, %v", got, err)
		}
		slice := &discoveryv1.EndpointSlice{}
		if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw-ipv4"}, slice); err != nil {
			return err
		}
		if len(slice.Ports) != 1 || ptr.Deref(slice.Ports[0].Name, "") != "grpc" || ptr.Deref(slice.Ports[0].Port, 0) != 15081 ||
			ptr.Deref(slice.Ports[0].AppProtocol, "") != "kubernetes.io/h2c" {
			return fmt.Errorf("EndpointSlice ports %+v", slice.Ports)
		}
		return nil
	})
	dep = deployment(t, ns, "gw")
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	must(t, k8s.Status().Update(t.Context(), dep))
	eventually(t, "Ready", func() error {
		cond, sg := ready(t, ns, "gw")
		if cond == nil || cond.Status != metav1.ConditionTrue || sg.Status.ReadyReplicas != 1 || sg.Status.ObservedGeneration != sg.Generation {
			return fmt.Errorf("Ready %v, status %+v", cond, sg.Status)
		}
		return nil
	})

	// The mode is immutable: its callers differ.
	cur := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gw"}, cur))
	cur.Spec.Mode = v1alpha1.SharedGuardModeProxy
	if err := k8s.Update(t.Context(), cur); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mode") {
		t.Errorf("changing spec.mode: %v, want Invalid naming spec.mode", err)
	}
}

// A SharedGuard written without a mode is a Proxy one, and stays one.
func TestTheDefaultModeIsProxy(t *testing.T) {
	ns := namespace(t, "sg-default-mode")
	must(t, k8s.Create(t.Context(), newSharedGuard(ns, "llm", 1)))
	sg := &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "llm"}, sg))
	if sg.Spec.Mode != v1alpha1.SharedGuardModeProxy {
		t.Fatalf("spec.mode = %q, want Proxy", sg.Spec.Mode)
	}
	sg.Spec.Mode = v1alpha1.SharedGuardModeExtProc
	if err := k8s.Update(t.Context(), sg); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mode") {
		t.Errorf("changing spec.mode: %v, want Invalid naming spec.mode", err)
	}
	if c := deployment(t, ns, "llm").Spec.Template.Spec.Containers[0]; c.Image != guardImage {
		t.Errorf("a SharedGuard without a mode runs %s, want the guard", c.Image)
	}

	// Written without a spec at all (kubectl apply of a bare object): Proxy too, and the
	// mode cannot be added later.
	bare := &unstructured.Unstructured{}
	bare.SetAPIVersion(v1alpha1.GroupVersion.String())
	bare.SetKind("SharedGuard")
	bare.SetNamespace(ns)
	bare.SetName("bare")
	must(t, k8s.Create(t.Context(), bare))
	sg = &v1alpha1.SharedGuard{}
	must(t, k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "bare"}, sg))
	if sg.Spec.Mode != v1alpha1.SharedGuardModeProxy {
		t.Fatalf("a SharedGuard without a spec: spec.mode = %q, want Proxy", sg.Spec.Mode)
	}
	sg.Spec.Mode = v1alpha1.SharedGuardModeExtProc
	if err := k8s.Update(t.Context(), sg); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mode") {
		t.Errorf("adding spec.mode ExtProc to a SharedGuard written without a spec: %v, want Invalid naming spec.mode", err)
	}
}

// The ExtProc sample of config/samples/shared is accepted by the CRD as written.
func TestTheExtProcSampleIsValid(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "shared", "extproc-shared-guard.yaml"))
	must(t, err)
	sg := &v1alpha1.SharedGuard{}
	must(t, yaml.UnmarshalStrict(b, sg))
	sg.Namespace = namespace(t, "sg-extproc-sample")
	must(t, k8s.Create(t.Context(), sg))
	if sg.Spec.Mode != v1alpha1.SharedGuardModeExtProc {
		t.Errorf("the sample's mode is %q", sg.Spec.Mode)
	}
}
