package injection

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mcpupstream "github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
)

// render adds the guard to pod: the container, its volumes, the marks of an injected pod,
// and the base URLs of the app containers. It returns what the user should be told.
func render(pod *corev1.Pod, cfg *Config, s guardSettings, caPEM []byte) []finding {
	markInjected(pod, cfg, caPEM)

	// App containers learn the guard's address first, so the guard itself is not counted.
	findings := setBaseURLs(pod, cfg, s)
	findings = append(findings, setPlaceholderKeys(pod, cfg, s.providers)...)

	guard := guardContainer(cfg, s)
	if cfg.NativeSidecars {
		// First, so that init containers after it can already call a model through it.
		guard.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		pod.Spec.InitContainers = append([]corev1.Container{guard}, pod.Spec.InitContainers...)
	} else {
		// Regular containers start in order but nothing waits for the guard's startup
		// probe: an app that calls a model at once may see connection refused until the
		// guard is ready (README, "Clusters older than 1.29").
		if _, ok := pod.Annotations[annotationDefaultContainer]; !ok && len(pod.Spec.Containers) > 0 {
			pod.Annotations[annotationDefaultContainer] = pod.Spec.Containers[0].Name
		}
		pod.Spec.Containers = append([]corev1.Container{guard}, pod.Spec.Containers...)
	}
	addGuardVolumes(pod)
	return findings
}

// markInjected writes the marks of a pod the injector rendered a guard into: the label
// that puts it in the manager's cache, the injector's version, and the operator's CA,
// which the guard's CA volume reads.
func markInjected(pod *corev1.Pod, cfg *Config, caPEM []byte) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[guardv1.LabelInjected] = labelTrue
	pod.Annotations[guardv1.AnnotationInjectorVersion] = cfg.Version
	pod.Annotations[guardv1.AnnotationCABundle] = string(caPEM)
}

// addGuardVolumes adds the guard's volumes to pod, and the service account its token is
// projected for.
func addGuardVolumes(pod *corev1.Pod) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, guardVolumes()...)
	// A projected token needs a named service account. The apiserver's ServiceAccount
	// admission plugin names "default" before webhooks run; where it is off, say it here.
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
}

// setBaseURLs points the app containers' OpenAI, Anthropic and Gemini SDKs at the guard, and
// gives them the guard's URL of each MCP server it fronts (GUARDRAIL_MCP_<NAME>_URL). An
// explicit value is kept (the app may have a reason) and reported: its calls may not pass
// through the guard. A value that comes from envFrom cannot be seen here; env set by the
// injector takes precedence over it.
func setBaseURLs(pod *corev1.Pod, cfg *Config, s guardSettings) []finding {
	base := "http://127.0.0.1:" + strconv.Itoa(int(cfg.ProxyPort))
	want := []corev1.EnvVar{
		{Name: envOpenAIBaseURL, Value: base + "/v1"},
		{Name: envAnthropicBaseURL, Value: base},
		{Name: envGeminiBaseURL, Value: base},
	}
	for _, u := range s.mcpUpstreams {
		want = append(want, corev1.EnvVar{Name: mcpupstream.EnvVar(u.Name), Value: mcpupstream.GuardURL(int(cfg.ProxyPort), u.Name)})
	}
	var findings []finding
	for _, c := range appContainers(pod, cfg) {
		for _, w := range want {
			if hasEnv(c, w.Name) {
				findings = append(findings, finding{ReasonBaseURLKept, fmt.Sprintf(
					"container %s sets %s itself; it is kept, and calls through it may bypass the guard", c.Name, w.Name)})
				continue
			}
			c.Env = append(c.Env, w)
		}
	}
	return findings
}

// appContainers are the containers that call a model through the guard: the regular
// ones, and the init containers when the guard is a native sidecar. Init containers run
// after the native sidecar has started; before 1.29 they run before the guard exists, so
// they are left alone. Call it before the guard is added.
func appContainers(pod *corev1.Pod, cfg *Config) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	if cfg.NativeSidecars {
		for i := range pod.Spec.InitContainers {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	return out
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func guardContainer(cfg *Config, s guardSettings) corev1.Container {
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: s.cpuRequest, corev1.ResourceMemory: s.memoryRequest},
		Limits:   corev1.ResourceList{},
	}
	if !s.cpuLimit.IsZero() {
		resources.Limits[corev1.ResourceCPU] = s.cpuLimit
	}
	if !s.memoryLimit.IsZero() {
		resources.Limits[corev1.ResourceMemory] = s.memoryLimit
	}
	args := []string{
		"--" + flagListen + "=" + listenHost(s) + ":" + strconv.Itoa(int(cfg.ProxyPort)),
		"--" + flagAdminListen + "=:" + strconv.Itoa(int(cfg.AdminPort)),
		"--" + flagControlPlane + "=" + cfg.ControlPlaneURL,
		"--" + flagTokenFile + "=" + guardv1.TokenPath,
		"--" + flagCAFile + "=" + guardv1.CAPath,
		"--" + flagSnapshotDir + "=" + snapshotDir,
		"--" + flagOpenAIUpstream + "=" + s.openAIUpstream,
		"--" + flagAnthropicUpstream + "=" + s.anthropicUpstream,
	}
	if s.geminiUpstream != "" {
		args = append(args, "--"+flagGeminiUpstream+"="+s.geminiUpstream)
	}
	for _, u := range s.mcpUpstreams {
		args = append(args, "--"+flagMCPUpstream+"="+u.String())
	}
	args = append(args, providerArgs(s.providers)...)
	args = append(args, auditLogArgs(s)...)
	env := []corev1.EnvVar{
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldEnv("POD_UID", "metadata.uid"),
		{Name: envGOMAXPROCS, Value: strconv.FormatInt(gomaxprocs(s), 10)},
	}
	if limit := gomemlimit(s); limit > 0 {
		env = append(env, corev1.EnvVar{Name: envGOMEMLIMIT, Value: strconv.FormatInt(limit, 10)})
	}
	env = append(env, tracingEnv(s.tracing)...)
	admin := intstr.FromString(portNameAdmin)
	return corev1.Container{
		Name:            guardv1.ContainerName,
		Image:           cfg.Image,
		ImagePullPolicy: cfg.ImagePullPolicy,
		Command:         cfg.Command,
		Args:            args,
		Env:             env,
		Ports: []corev1.ContainerPort{
			{Name: portNameProxy, ContainerPort: cfg.ProxyPort, Protocol: corev1.ProtocolTCP},
			{Name: portNameAdmin, ContainerPort: cfg.AdminPort, Protocol: corev1.ProtocolTCP},
		},
		Resources: resources,
		// The guard refuses traffic until it holds a policy (fail closed): with a native
		// sidecar the app containers start only once this probe passes.
		StartupProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: admin}},
			PeriodSeconds:    1,
			FailureThreshold: 120,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: admin}},
			PeriodSeconds: 5,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: admin}},
			PeriodSeconds:    10,
			FailureThreshold: 3,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volumeToken, MountPath: tokenDir, ReadOnly: true},
			{Name: volumeCA, MountPath: caDir, ReadOnly: true},
			{Name: volumePodInfo, MountPath: podInfoDir, ReadOnly: true},
			{Name: volumeSnapshot, MountPath: snapshotDir},
			// Keeps the pod's Kubernetes API token out of the guard (volumeNoAPIToken).
			{Name: volumeNoAPIToken, MountPath: serviceAccountTokenDir, ReadOnly: true},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](guardUID),
			RunAsGroup:               ptr.To[int64](guardUID),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func guardVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: volumeToken, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: guardv1.Audience, ExpirationSeconds: ptr.To[int64](tokenExpirationSeconds), Path: "token",
			}}},
		}}},
		{Name: volumeCA, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "ca.crt",
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + guardv1.AnnotationCABundle + "']"},
			}},
		}}},
		{Name: volumePodInfo, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
		}}},
		// In memory (tmpfs): the persisted snapshot holds classifier credentials, which
		// must not reach the node's disk; it outlives a restart of the guard, not of the pod.
		{Name: volumeSnapshot, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(snapshotSizeLimit),
		}}},
		// Empty and mounted read-only: it only occupies the service-account token's path.
		{Name: volumeNoAPIToken, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(noAPITokenSizeLimit),
		}}},
	}
}

var (
	// snapshotSizeLimit bounds the persisted policy snapshot's emptyDir.
	snapshotSizeLimit = resource.MustParse("64Mi")
	// noAPITokenSizeLimit bounds the emptyDir that nothing writes to.
	noAPITokenSizeLimit = resource.MustParse("4Ki")
)

// RenderGuard adds to pod what the injector adds for g with the manager's default
// resources and upstreams and the given ModelProviders: the guard (a native sidecar when
// native, else the first regular container), its volumes, the marks of an injected pod and
// the app containers' base URLs. Tools that create a guarded pod without the webhook use
// it (make dev-lite's local guard, load harnesses, tests): VerifyGuard accepts the result.
// It knows the providers by name only, so the app containers get no placeholder keys.
func RenderGuard(pod *corev1.Pod, g Guard, native bool, caPEM []byte, providers ...string) {
	RenderTracedGuard(pod, g, Tracing{}, native, caPEM, providers...)
}

// RenderTracedGuard is RenderGuard for a guard injected with tracing setting t (off when
// zero): VerifyGuard accepts the result when g.Tracing holds t.
func RenderTracedGuard(pod *corev1.Pod, g Guard, t Tracing, native bool, caPEM []byte, providers ...string) {
	cfg := Config{Tracing: t, Image: g.Image, Command: g.Command, ProxyPort: g.ProxyPort, AdminPort: g.AdminPort,
		ControlPlaneURL: g.ControlPlaneURL, NativeSidecars: native, Version: moduleVersion(),
		CPURequest: resource.MustParse(defaultCPURequest), MemoryRequest: resource.MustParse(defaultMemoryRequest),
		MemoryLimit: resource.MustParse(defaultMemoryLimit), OpenAIUpstream: defaultOpenAIUpstream, AnthropicUpstream: defaultAnthropicUpstream,
		GeminiUpstream: defaultGeminiUpstream}
	s, _ := resolveSettings(pod.Annotations, &cfg)
	for _, p := range providers {
		s.providers = append(s.providers, chosenProvider{name: p})
	}
	slices.SortFunc(s.providers, func(a, b chosenProvider) int { return strings.Compare(a.name, b.name) })
	render(pod, &cfg, s, caPEM)
}
