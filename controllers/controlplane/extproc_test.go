package controlplane_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/controllers/injection"
	cp "github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// extProcPod is the pod of an ExtProc SharedGuard as the operator renders it for the
// servers' guard (testGuard), labelled app=<app>, edited by edit, created and Running.
func extProcPod(t *testing.T, ns, name, app string, edit func(p *corev1.Pod, c *corev1.Container)) *corev1.Pod {
	t.Helper()
	r := injection.NewRendererFor(injection.Config{
		Image: testGuard.Image, Command: testGuard.Command, ExtProcImage: testGuard.ExtProcImage,
		ProxyPort: testGuard.ProxyPort, AdminPort: testGuard.AdminPort, ControlPlaneURL: testGuard.ControlPlaneURL,
		OperatorNamespace: leaseNS, Version: "v0.0.0-test",
		CPURequest: resource.MustParse("100m"), MemoryRequest: resource.MustParse("64Mi"), MemoryLimit: resource.MustParse("256Mi"),
	}, func() ([]byte, error) { return []byte("ca"), nil })
	tmpl, refused, err := r.SharedExtProcPod(map[string]string{"app": app, v1alpha1.LabelSharedGuard: "gw"}, nil)
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedExtProcPod: %v, refused %v", err, refused)
	}
	p := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	p.Namespace, p.Name = ns, name
	p.Spec.ServiceAccountName = "app" // the tests' tokens are the app service account's
	if edit != nil {
		edit(p, &p.Spec.Containers[0])
	}
	return createPod(t, p)
}

// TestAnExtProcSharedGuardSubscribesAndAMimicIsRefused: the Envoy external processor's
// pod as an ExtProc SharedGuard renders it gets the policy of the Guardrails selecting its
// labels, with their credentials; a tenant with namespace admin who writes that pod with
// one change (another image, a flag more, a ModelProvider, an environment variable, a
// volume, another listener) gets 403 not_a_guard, so no credential reaches it.
func TestAnExtProcSharedGuardSubscribesAndAMimicIsRefused(t *testing.T) {
	ns := fixture(t)
	p := extProcPod(t, ns, "gw-1", "web", nil)
	status, body := waitSnapshot(t, token(t, p, guardv1.Audience))
	if status != http.StatusOK {
		t.Fatalf("the rendered processor's subscription: %d %s", status, body)
	}
	var s cp.Snapshot
	must(t, json.Unmarshal(body, &s))
	var names []string
	for _, g := range s.Guardrails {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "web-judge,web-words" {
		t.Errorf("the processor labelled app=web got Guardrails %v, want web-judge and web-words", names)
	}
	if _, err := cp.Compile(&s); err != nil {
		t.Errorf("the snapshot does not compile: %v", err)
	}

	for _, tc := range []struct {
		name string
		edit func(p *corev1.Pod, c *corev1.Container)
	}{
		{"the tenant's image", func(_ *corev1.Pod, c *corev1.Container) { c.Image = "registry.test/tenant/extproc:v1" }},
		{"a ModelProvider", func(_ *corev1.Pod, c *corev1.Container) { c.Args = append(c.Args, "--provider=openai-prod") }},
		{"pod labels that select nothing", func(_ *corev1.Pod, c *corev1.Container) { c.Args = append(c.Args, "--pod-labels=nothing=selected") }},
		{"a decision log into a volume of the tenant's", func(p *corev1.Pod, c *corev1.Container) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "loot", MountPath: "/loot"})
			c.Args = append(c.Args, "--decision-log=/loot/decisions")
		}},
		{"a volume of the tenant's", func(p *corev1.Pod, c *corev1.Container) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "loot", MountPath: "/loot"})
		}},
		{"a proxy in its environment", func(_ *corev1.Pod, c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://tenant.example:3128"})
		}},
		{"another listener", func(_ *corev1.Pod, c *corev1.Container) {
			for i, a := range c.Args {
				if strings.HasPrefix(a, "--listen=") {
					c.Args[i] = "--listen=:15082"
				}
			}
		}},
		{"a second container reading its snapshot", func(p *corev1.Pod, c *corev1.Container) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "reader", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "guardrail-snapshot", MountPath: "/loot"}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "mimic-" + strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), "'", ""))
			m := extProcPod(t, ns, name, "web", tc.edit)
			status, body := poll(t, token(t, m, guardv1.Audience), cp.SubscribeRequest{})
			if status != http.StatusForbidden || !strings.Contains(string(body), "does not carry the guard") {
				t.Errorf("subscribe: %d %q, want 403 not_a_guard", status, body)
			}
			if strings.Contains(string(body), canary) {
				t.Error("the refusal carries a classifier credential")
			}
		})
	}
}
