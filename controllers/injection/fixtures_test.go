package injection

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

func testConfig() *Config {
	return &Config{
		Image:             "guard:test",
		Command:           []string{"/guard"},
		ProxyPort:         15080,
		AdminPort:         15090,
		ControlPlaneURL:   "https://guardrail-control-plane.guardrail-system.svc:9444",
		OperatorNamespace: "guardrail-system",
		NativeSidecars:    true,
		Version:           "v0.0.0-test",
		CPURequest:        resource.MustParse("100m"),
		MemoryRequest:     resource.MustParse("64Mi"),
		MemoryLimit:       resource.MustParse("256Mi"),
		OpenAIUpstream:    "https://api.openai.com",
		AnthropicUpstream: "https://api.anthropic.com",
		GeminiUpstream:    "https://generativelanguage.googleapis.com",
	}
}

type podOption func(*corev1.Pod)

// newPod is a pod that meets the restricted Pod Security Standard by itself.
func newPod(opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "apps", Labels: map[string]string{"app": "chat"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "app:1",
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabel(k, v string) podOption { return func(p *corev1.Pod) { p.Labels[k] = v } }

func withAnnotation(k, v string) podOption {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func withEnv(name, value string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func withHostNetwork() podOption { return func(p *corev1.Pod) { p.Spec.HostNetwork = true } }

func withInitContainer(name string) podOption {
	return func(p *corev1.Pod) {
		c := p.Spec.Containers[0]
		c.Name = name
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func withPort(port int32) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port})
	}
}

func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func guardOf(p *corev1.Pod) *corev1.Container {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if list[i].Name == guardv1.ContainerName {
				return &list[i]
			}
		}
	}
	return nil
}
