package injection

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A guard written by hand with a flag or an environment variable that narrows what it
// enforces (another namespace's policy, a label set that selects nothing, a local policy
// file) would acknowledge a policy it does not enforce: it is not the guard.
func TestVerifyGuardRefusesAGuardToldToEnforceLess(t *testing.T) {
	cfg := testConfig()
	base := func() *corev1.Pod {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		s, _ := resolveSettings(nil, cfg)
		render(pod, cfg, s, []byte("ca"))
		return pod
	}
	if err := VerifyGuard(base(), cfg.Image, cfg.Command); err != nil {
		t.Fatalf("the rendered guard: %v", err)
	}
	for name, edit := range map[string]func(c *corev1.Container){
		"--namespace":       func(c *corev1.Container) { c.Args = append(c.Args, "--namespace=elsewhere") },
		"--pod-labels":      func(c *corev1.Container) { c.Args = append(c.Args, "--pod-labels=nothing=selected") },
		"--policy-file":     func(c *corev1.Container) { c.Args = append(c.Args, "--policy-file=/tmp/empty.yaml") },
		"-pass-through":     func(c *corev1.Container) { c.Args = append(c.Args, "-pass-through=/v1/chat/completions") },
		"a bare argument":   func(c *corev1.Container) { c.Args = append(c.Args, "--namespace", "elsewhere") },
		"POD_NAMESPACE set": func(c *corev1.Container) { setEnv(c, corev1.EnvVar{Name: "POD_NAMESPACE", Value: "elsewhere"}) },
		"POD_LABELS set":    func(c *corev1.Container) { setEnv(c, corev1.EnvVar{Name: "POD_LABELS", Value: "nothing=selected"}) },
		"env from a Secret": func(c *corev1.Container) { c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}} },
		"POD_NAME from uid": func(c *corev1.Container) {
			setEnv(c, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}})
		},
	} {
		pod := base()
		guard, _ := findGuard(pod)
		edit(guard)
		err := VerifyGuard(pod, cfg.Image, cfg.Command)
		if err == nil || !strings.Contains(err.Error(), ContainerName) {
			t.Errorf("%s: VerifyGuard %v, want a refusal naming the guard", name, err)
		}
	}
}

func setEnv(c *corev1.Container, v corev1.EnvVar) {
	for i := range c.Env {
		if c.Env[i].Name == v.Name {
			c.Env[i] = v
			return
		}
	}
	c.Env = append(c.Env, v)
}

// An ephemeral container that targets the guard (kubectl debug --target) shares its
// process namespace and could read its memory, where a keyless pod's provider key is: the
// pod stops counting as a guard, so the control plane sends it nothing more. One that
// targets the app does not matter to the guard.
func TestVerifyGuardRefusesAPodDebuggingItsGuard(t *testing.T) {
	cfg := testConfig()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	s, _ := resolveSettings(nil, cfg)
	render(pod, cfg, s, []byte("ca"))
	debug := func(target string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger-" + target, Image: "busybox"},
			TargetContainerName: target}
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{debug("app")}
	if err := VerifyGuard(pod, cfg.Image, cfg.Command); err != nil {
		t.Fatalf("a debug container targeting the app: %v", err)
	}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, debug(ContainerName))
	err := VerifyGuard(pod, cfg.Image, cfg.Command)
	if err == nil || !strings.Contains(err.Error(), "debugger-"+ContainerName) {
		t.Errorf("a debug container targeting the guard: VerifyGuard %v, want a refusal naming it", err)
	}
}
