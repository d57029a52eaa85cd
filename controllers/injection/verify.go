package injection

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
)

// VerifyGuard says why pod does not carry the guard as the injector renders it, or nil
// when it does. Labels and annotations are the tenant's to write and prove nothing; what
// is checked is the pod's spec, which the apiserver keeps immutable where it matters:
//
//   - a container named ContainerName (a native sidecar, or a regular container in the
//     legacy shape) runs the guard: an image of the same repository as image, with the
//     injector's command;
//   - the pod has exactly one volume that projects a service-account token of audience
//     guardrail.dev, the injector's, and only the guard mounts it: no other container
//     holds a token the control plane would take for the guard's;
//   - no other container mounts the guard's snapshot volume (it holds classifier
//     credentials);
//   - the guard takes only the flags the injector passes it, and POD_NAME and
//     POD_NAMESPACE (which narrow what it enforces) only from the downward API, never
//     POD_LABELS: a guard told to enforce another namespace's or label set's policy would
//     acknowledge a policy it does not enforce;
//   - the pod does not share one process namespace between its containers, where an app
//     could read the guard's files through /proc.
//
// The control plane accepts acknowledgements and decisions only from pods that pass, and
// a namespace labelled required admits only pods that pass after injection.
func VerifyGuard(pod *corev1.Pod, image string, command []string) error {
	guard, init := findGuard(pod)
	switch {
	case guard == nil:
		return fmt.Errorf("the pod has no container named %s", ContainerName)
	case init && (guard.RestartPolicy == nil || *guard.RestartPolicy != corev1.ContainerRestartPolicyAlways):
		return fmt.Errorf("the init container %s is not a sidecar (restartPolicy Always)", ContainerName)
	case imageRepository(guard.Image) != imageRepository(image):
		return fmt.Errorf("container %s runs image %q, not the guard's (%s)", ContainerName, guard.Image, imageRepository(image))
	case !slices.Equal(guard.Command, command):
		return fmt.Errorf("container %s does not run the guard's command", ContainerName)
	}
	if why := guardArgs(guard); why != "" {
		return fmt.Errorf("container %s %s", ContainerName, why)
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		return fmt.Errorf("the pod shares one process namespace between its containers, so its apps can read the guard's files")
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].TargetContainerName == ContainerName {
			return fmt.Errorf("ephemeral container %s shares the guard's process namespace, so it can read the guard's files and memory", pod.Spec.EphemeralContainers[i].Name)
		}
	}
	tokens := 0
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !projectsGuardToken(v) {
			continue
		}
		tokens++
		if v.Name != volumeToken {
			return fmt.Errorf("volume %s projects a token of audience %s that is not the guard's", v.Name, controlplane.Audience)
		}
	}
	if tokens != 1 {
		return fmt.Errorf("the pod has no volume %s projecting the guard's token", volumeToken)
	}
	if !mounts(guard, volumeToken) {
		return fmt.Errorf("container %s does not mount its token", ContainerName)
	}
	if name := otherMount(pod, guard, volumeToken, volumeSnapshot); name != "" {
		return fmt.Errorf("container %s mounts a volume of the guard's (its token or its snapshot)", name)
	}
	return nil
}

// injectedFlags are the flags render passes the guard; the values of the upstreams (MCP
// ones included) come from the pod's annotations, the rest from the manager.
var injectedFlags = []string{flagListen, flagAdminListen, flagControlPlane, flagTokenFile, flagCAFile, flagSnapshotDir,
	flagOpenAIUpstream, flagAnthropicUpstream, flagMCPUpstream, flagProvider}

// GuardProviders returns the ModelProviders a pod's guard was injected for: the values of
// its --provider flags, sorted and without duplicates. The caller verifies the pod first
// (VerifyGuard): only then are the flags the injector's.
func GuardProviders(pod *corev1.Pod) []string {
	guard, _ := findGuard(pod)
	if guard == nil {
		return nil
	}
	var names []string
	for _, a := range guard.Args {
		if v, ok := strings.CutPrefix(a, "--"+flagProvider+"="); ok && v != "" {
			names = append(names, v)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// guardEnv are the guard's environment variables that change what it enforces, and the
// downward-API field each must come from ("" for one the injector never sets).
var guardEnv = map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_LABELS": ""}

// guardArgs says how the guard's arguments or environment differ from what the injector
// passes in what narrows or disables what it enforces, or "".
func guardArgs(guard *corev1.Container) string {
	for _, a := range guard.Args {
		name, _, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "--") || !slices.Contains(injectedFlags, name) {
			return fmt.Sprintf("takes an argument the injector does not pass (%.64q)", a)
		}
	}
	for _, e := range guard.Env {
		field, guarded := guardEnv[e.Name]
		if !guarded {
			continue
		}
		if field == "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != field {
			return fmt.Sprintf("sets %s other than the injector does", e.Name)
		}
	}
	if len(guard.EnvFrom) > 0 {
		return "takes environment variables from a ConfigMap or Secret, which the injector never does"
	}
	return ""
}

// findGuard returns the guard's container and whether it is an init container.
func findGuard(pod *corev1.Pod) (*corev1.Container, bool) {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == ContainerName {
			return &pod.Spec.InitContainers[i], true
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == ContainerName {
			return &pod.Spec.Containers[i], false
		}
	}
	return nil, false
}

// projectsGuardToken reports whether v projects a service-account token for the control
// plane's audience.
func projectsGuardToken(v *corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == controlplane.Audience {
			return true
		}
	}
	return false
}

func mounts(c *corev1.Container, volume string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return true
		}
	}
	return false
}

// otherMount names a container other than guard that mounts one of volumes, or "".
// Ephemeral containers cannot mount a volume of their own, but they can mount the pod's.
func otherMount(pod *corev1.Pod, guard *corev1.Container, volumes ...string) string {
	check := func(ms []corev1.VolumeMount) bool {
		for _, m := range ms {
			if slices.Contains(volumes, m.Name) {
				return true
			}
		}
		return false
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if &list[i] != guard && check(list[i].VolumeMounts) {
				return list[i].Name
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		if check(c.VolumeMounts) {
			return c.Name
		}
	}
	return ""
}

// imageRepository is an image reference without its tag and digest:
// "registry:5000/guardrail/operator:v1@sha256:…" → "registry:5000/guardrail/operator".
// A guard injected by an earlier release of the operator runs another tag of the same
// repository and is still the guard.
func imageRepository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndexByte(ref, '/')
	if colon := strings.LastIndexByte(ref, ':'); colon > slash {
		ref = ref[:colon]
	}
	return ref
}
