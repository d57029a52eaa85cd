package injection

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	mcpupstream "github.com/guardrail-dev/guardrail-operator/runtime/mcp/upstream"
)

// Guard is what every guard the injector renders shares, whatever the pod: the manager's
// settings of the guard. With a pod's own settings (its annotations and ModelProviders,
// which the guard's arguments and resources show) it determines the guard container
// exactly, and VerifyGuard compares a pod's guard with that rendering.
type Guard struct {
	// Image is the guard's image. A guard of another tag or digest of the same repository
	// is still the guard: pods injected before an upgrade run the earlier release's.
	Image string
	// Command runs the guard in Image; empty uses the image's entrypoint.
	Command []string
	// ExtProcImage is the Envoy external processor's image, which a SharedGuard in ExtProc
	// mode runs (extproc.go); empty: no ext_proc server verifies. Another tag or digest of
	// its repository is still the processor, as for Image.
	ExtProcImage string
	// ProxyPort and AdminPort are the guard's ports (Config).
	ProxyPort, AdminPort int32
	// ControlPlaneURL is where the guard subscribes and sends its token.
	ControlPlaneURL string
	// Tracing are the tracing settings a guard may carry besides none: the manager's
	// current one, when on, and the earlier ones it still accepts (tracing.go).
	Tracing []Tracing
}

// Guard returns the part of cfg every rendered guard shares.
func (c *Config) Guard() Guard {
	return Guard{Image: c.Image, Command: c.Command, ExtProcImage: c.ExtProcImage, ProxyPort: c.ProxyPort, AdminPort: c.AdminPort, ControlPlaneURL: c.ControlPlaneURL,
		Tracing: acceptedTracing(c.Tracing, c.PreviousTracing)}
}

// VerifyGuard says why pod does not carry the guard as the injector renders it, or nil
// when it does. Labels and annotations are the tenant's to write and prove nothing; what
// is checked is the pod's spec, which the apiserver keeps immutable where it matters.
//
// The guard container must be the one render makes, value for value, of g and of the
// per-pod settings its own arguments and resources show (upstreams, MCP servers,
// ModelProviders, requests and limits: what the pod's annotations may choose anyway) and
// of its tracing setting, which must be none or one of g.Tracing (tracing.go):
// the image's repository, the command, every argument in order (the control plane's URL,
// the token and CA files, the ports), every environment variable (none added: no proxy,
// no GODEBUG, no SSL_* or GO* variable; POD_NAME, POD_NAMESPACE and POD_UID only from the
// downward API), no envFrom, every mount, the security context, and no command run in it
// by a probe or a lifecycle hook. What the apiserver or another webhook may set without
// changing whom the guard trusts or what it runs is ignored: defaults, resources (a
// LimitRange may add limits; GOMAXPROCS and GOMEMLIMIT are then any positive number), the
// pull policy, and HTTP probes (a mesh may rewrite them).
//
// The pod around it must not re-point or read the guard:
//   - no hostAliases, and a DNS policy of ClusterFirst or Default with a dnsConfig of
//     options only (no nameservers or search domains), so the control plane's and the
//     providers' host names resolve as for any pod;
//   - not hostNetwork, hostPID or hostIPC, no process namespace shared between its
//     containers, and no ephemeral container targeting the guard;
//   - exactly one volume projects a service-account token of audience guardrail.dev, the
//     injector's, and the guard's volumes are the injector's; no other container mounts
//     the guard's token or its snapshot (it holds classifier and provider credentials).
//
// A container named like the guard that runs the manager's Envoy external processor image
// (Guard.ExtProcImage) is compared instead with the processor an ExtProc SharedGuard's pod
// carries (extproc.go, verifyExtProcContainer), value for value; the pod around it is held
// to the same rules. A processor serving TLS mounts the volume of its Secret, which must
// be the rendered one: the Secret's tls.crt and tls.key only (verifyTLSVolume). So must a
// shared guard's proxy serving TLS (SharedGuardPodWithTLS): its --tls-cert-file and
// --tls-key-file, after every other flag, and its mount, exactly as rendered; a guard on
// loopback (a sidecar) takes neither the flags nor the mount.
//
// The control plane serves only pods that pass, the injector refuses a pod with a
// container named like the guard that does not, and a namespace labelled required admits
// only pods that pass after injection.
func VerifyGuard(pod *corev1.Pod, g Guard) error {
	if why := podAroundTheGuard(pod); why != "" {
		return errors.New(why)
	}
	guard, init := findGuard(pod)
	if guard == nil {
		return fmt.Errorf("the pod has no container named %s", guardv1.ContainerName)
	}
	verify := verifyGuardContainer
	if g.extProc(guard) {
		verify = verifyExtProcContainer // extproc.go
	}
	if err := verify(guard, init, g); err != nil {
		return err
	}
	if err := verifyTLSVolume(pod, guard); err != nil { // extproc.go
		return err
	}
	return podKeepsTheGuardsOwn(pod, guard)
}

// verifyGuardContainer says why guard, the container named like the guard (an init
// container when init), is not the guard render makes of g and of the settings its own
// arguments, resources and environment show, or nil.
func verifyGuardContainer(guard *corev1.Container, init bool, g Guard) error {
	switch {
	case init && (guard.RestartPolicy == nil || *guard.RestartPolicy != corev1.ContainerRestartPolicyAlways):
		return fmt.Errorf("the init container %s is not a sidecar (restartPolicy Always)", guardv1.ContainerName)
	case imageRepository(guard.Image) != imageRepository(g.Image):
		return fmt.Errorf("container %s runs image %q, not the guard's (%s)", guardv1.ContainerName, guard.Image, imageRepository(g.Image))
	case !slices.Equal(guard.Command, g.Command):
		return fmt.Errorf("container %s does not run the guard's command", guardv1.ContainerName)
	}
	s, why := settingsOf(guard)
	if why != "" {
		return fmt.Errorf("container %s %s", guardv1.ContainerName, why)
	}
	tls := takesTLSFlags(guard)
	if tls && !s.shared {
		return fmt.Errorf("container %s serves TLS on loopback (--%s, --%s): only a shared guard's proxy, alone in its pod, "+
			"is rendered with them", guardv1.ContainerName, flagTLSCertFile, flagTLSKeyFile)
	}
	if s.shared && len(s.providers) > 0 {
		return fmt.Errorf("container %s listens beyond loopback and carries a ModelProvider: whoever reaches it would call "+
			"the model with the platform's credential", guardv1.ContainerName)
	}
	if !g.acceptsTracing(s.tracing) {
		return fmt.Errorf("container %s has OTEL_* tracing settings the manager does not render (its endpoint, protocol, "+
			"sampler or resource attributes differ from the manager's --guard-otel-* and --guard-otel-previous)", guardv1.ContainerName)
	}
	want := renderedGuard(g, s, init)
	if tls {
		withTLS(&want) // a shared proxy serving TLS: both flags, at tlsDir, last, and the mount
	}
	if why := containerDiff(guard, want); why != "" {
		return fmt.Errorf("container %s %s", guardv1.ContainerName, why)
	}
	return nil
}

// takesTLSFlags reports whether a guard container takes --tls-cert-file or
// --tls-key-file.
func takesTLSFlags(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--"+flagTLSCertFile+"=") || strings.HasPrefix(a, "--"+flagTLSKeyFile+"=")
	})
}

// podKeepsTheGuardsOwn says how a pod whose guard container (guard) is the rendered one
// lets another container reach what is the guard's alone (its process, its token, its
// snapshot) or replaces a volume of the guard's, or nil.
func podKeepsTheGuardsOwn(pod *corev1.Pod, guard *corev1.Container) error {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].TargetContainerName == guardv1.ContainerName {
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
			return fmt.Errorf("volume %s projects a token of audience %s that is not the guard's", v.Name, guardv1.Audience)
		}
	}
	if tokens != 1 {
		return fmt.Errorf("the pod has no volume %s projecting the guard's token", volumeToken)
	}
	for _, w := range guardVolumes() {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == w.Name })
		if i < 0 || !sameVolume(pod.Spec.Volumes[i], w) {
			return fmt.Errorf("its volume %s is not the injector's", w.Name)
		}
	}
	if name := otherMount(pod, guard, volumeToken, volumeSnapshot, volumeTLS); name != "" {
		return fmt.Errorf("container %s mounts a volume of the guard's (its token, its snapshot or its TLS key)", name)
	}
	return nil
}

// sameVolume compares a volume of an admitted pod with the one render makes, ignoring
// the fields the apiserver defaults (file modes, a field reference's API version).
func sameVolume(got, want corev1.Volume) bool {
	got = *got.DeepCopy()
	if d := got.DownwardAPI; d != nil && want.DownwardAPI != nil {
		d.DefaultMode = want.DownwardAPI.DefaultMode
		for i := range d.Items {
			if f := d.Items[i].FieldRef; f != nil {
				f.APIVersion = ""
			}
		}
	}
	if p := got.Projected; p != nil && want.Projected != nil {
		p.DefaultMode = want.Projected.DefaultMode
	}
	return equality.Semantic.DeepEqual(got, want)
}

// podAroundTheGuard says how pod's own spec could re-point the guard's host names or
// reach into the guard, or "".
func podAroundTheGuard(pod *corev1.Pod) string {
	spec := &pod.Spec
	switch {
	case len(spec.HostAliases) > 0:
		return "the pod sets hostAliases, which would re-point the host names the guard calls (its control plane, its providers)"
	case spec.DNSPolicy != "" && spec.DNSPolicy != corev1.DNSClusterFirst && spec.DNSPolicy != corev1.DNSDefault:
		return fmt.Sprintf("the pod's dnsPolicy is %s: the guard resolves its control plane and providers only with ClusterFirst or Default", spec.DNSPolicy)
	case spec.DNSConfig != nil && (len(spec.DNSConfig.Nameservers) > 0 || len(spec.DNSConfig.Searches) > 0):
		return "the pod's dnsConfig sets nameservers or search domains, which would re-point the host names the guard calls; only options are accepted"
	case spec.HostNetwork:
		return "the pod uses the host's network: the guard's ports would be the node's"
	case spec.HostPID || spec.HostIPC:
		return "the pod shares the host's process or IPC namespace, where the guard's memory is within reach"
	case spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace:
		return "the pod shares one process namespace between its containers, so its apps can read the guard's files"
	}
	return ""
}

// settingsOf reads the per-pod settings a guard container was rendered with from its own
// arguments, resources and OTEL_* variables, or says why they are not settings the injector renders.
func settingsOf(c *corev1.Container) (guardSettings, string) {
	var s guardSettings
	seen := map[string]bool{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") || !slices.Contains(injectedFlags, name) {
			return s, fmt.Sprintf("takes an argument the injector does not pass (%.64q)", a)
		}
		repeatable := name == flagMCPUpstream || name == flagProvider
		if seen[name] && !repeatable {
			return s, fmt.Sprintf("takes --%s twice", name)
		}
		seen[name] = true
		switch name {
		case flagListen:
			s.shared = strings.HasPrefix(value, ":")
		case flagOpenAIUpstream, flagAnthropicUpstream, flagGeminiUpstream:
			if why := checkUpstream(value); why != "" {
				return s, fmt.Sprintf("takes a --%s that %s", name, why)
			}
			switch name {
			case flagOpenAIUpstream:
				s.openAIUpstream = value
			case flagAnthropicUpstream:
				s.anthropicUpstream = value
			default:
				s.geminiUpstream = value
			}
		case flagMCPUpstream:
			u, err := mcpupstream.Parse(value)
			if err != nil {
				return s, fmt.Sprintf("takes a --%s the injector would not render: %v", name, err)
			}
			s.mcpUpstreams = append(s.mcpUpstreams, u)
		case flagProvider:
			s.providers = append(s.providers, chosenProvider{name: value})
		case flagAuditLog:
			if value != "true" {
				return s, fmt.Sprintf("takes a --%s the injector would not render", name)
			}
			s.auditLog = true
		}
	}
	s.tracing = tracingOf(c.Env)
	r := c.Resources
	s.cpuRequest, s.memoryRequest = r.Requests[corev1.ResourceCPU], r.Requests[corev1.ResourceMemory]
	s.cpuLimit, s.memoryLimit = r.Limits[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory]
	return s, ""
}

// renderedGuard is the guard container render makes of g and s, in its native-sidecar
// shape when native.
func renderedGuard(g Guard, s guardSettings, native bool) corev1.Container {
	cfg := Config{Image: g.Image, Command: g.Command, ProxyPort: g.ProxyPort, AdminPort: g.AdminPort, ControlPlaneURL: g.ControlPlaneURL}
	c := guardContainer(&cfg, s)
	if native {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	return c
}

// containerDiff says in which field got, a guard container of an admitted pod, differs
// from want, the one render makes, or "". It names fields and variables, never values:
// an environment variable may hold a secret.
func containerDiff(got *corev1.Container, want corev1.Container) string {
	if why := execIn(got); why != "" {
		return why
	}
	if !slices.Equal(got.Args, want.Args) {
		return "takes arguments other than the ones the injector renders (their values, order or number differ)"
	}
	if len(got.EnvFrom) > 0 {
		return "takes environment variables from a ConfigMap or Secret, which the injector never does"
	}
	if why := envDiff(got.Env, want.Env); why != "" {
		return why
	}
	if !equality.Semantic.DeepEqual(got.VolumeMounts, want.VolumeMounts) {
		return "mounts volumes other than the injector's, or mounts them elsewhere"
	}
	if len(got.VolumeDevices) > 0 {
		return "mounts a block device"
	}
	if !equality.Semantic.DeepEqual(got.SecurityContext, want.SecurityContext) {
		return "has a security context other than the injector's"
	}
	if !equality.Semantic.DeepEqual(got.RestartPolicy, want.RestartPolicy) || len(got.RestartPolicyRules) > 0 {
		return "has a restart policy other than the injector's"
	}
	if got.WorkingDir != want.WorkingDir || got.Stdin || got.StdinOnce || got.TTY {
		return "sets a working directory, stdin or a TTY, which the injector never does"
	}
	if got.TerminationMessagePolicy != want.TerminationMessagePolicy ||
		(got.TerminationMessagePath != "" && got.TerminationMessagePath != corev1.TerminationMessagePathDefault) {
		return "has a termination message other than the injector's"
	}
	if !samePorts(got.Ports, want.Ports) {
		return "declares ports other than the injector's"
	}
	return ""
}

// execIn says which probe or lifecycle hook of c runs a command in the guard's container,
// or "": a command there runs with the guard's token and snapshot. HTTP, TCP, gRPC and
// sleep handlers are the kubelet's calls and are left to whoever rewrites them (a mesh).
func execIn(c *corev1.Container) string {
	probes := map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe}
	for _, name := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
		if p := probes[name]; p != nil && p.Exec != nil {
			return "runs a command in the guard's container (its " + name + ")"
		}
	}
	if l := c.Lifecycle; l != nil {
		if (l.PostStart != nil && l.PostStart.Exec != nil) || (l.PreStop != nil && l.PreStop.Exec != nil) {
			return "runs a command in the guard's container (a lifecycle hook)"
		}
	}
	return ""
}

// envDiff compares the guard's environment with the rendered one: the same variables in
// the same order, the same values or the same downward-API fields. GOMAXPROCS and
// GOMEMLIMIT are derived from resources another admission plugin may change (a LimitRange
// adds limits after the injector rendered none): GOMAXPROCS may hold any positive integer,
// and GOMEMLIMIT may be absent or hold one.
func envDiff(got, want []corev1.EnvVar) string {
	for _, e := range got {
		if !slices.ContainsFunc(want, func(w corev1.EnvVar) bool { return w.Name == e.Name }) && e.Name != envGOMEMLIMIT {
			return fmt.Sprintf("sets the environment variable %.64q, which the injector does not", e.Name)
		}
	}
	notMemLimit := func(e corev1.EnvVar) bool { return e.Name == envGOMEMLIMIT }
	for _, e := range got {
		if e.Name == envGOMEMLIMIT {
			if n, err := strconv.ParseInt(e.Value, 10, 64); err != nil || n <= 0 || e.ValueFrom != nil {
				return "sets " + envGOMEMLIMIT + " other than to a positive integer"
			}
		}
	}
	got, want = slices.DeleteFunc(slices.Clone(got), notMemLimit), slices.DeleteFunc(slices.Clone(want), notMemLimit)
	if len(got) != len(want) {
		return "lacks an environment variable the injector sets"
	}
	for i, w := range want {
		g := got[i]
		switch {
		case g.Name != w.Name:
			return fmt.Sprintf("sets %s where the injector sets %s", g.Name, w.Name)
		case w.Name == envGOMAXPROCS:
			if n, err := strconv.ParseInt(g.Value, 10, 64); err != nil || n <= 0 || g.ValueFrom != nil {
				return "sets " + envGOMAXPROCS + " other than to a positive integer"
			}
		case w.ValueFrom != nil:
			if g.Value != "" || g.ValueFrom == nil || g.ValueFrom.FieldRef == nil || g.ValueFrom.ResourceFieldRef != nil ||
				g.ValueFrom.FieldRef.FieldPath != w.ValueFrom.FieldRef.FieldPath {
				return fmt.Sprintf("sets %s other than the injector does", w.Name)
			}
		case g.Value != w.Value || g.ValueFrom != nil:
			return fmt.Sprintf("sets %s other than the injector does", w.Name)
		}
	}
	return ""
}

// samePorts compares ports, ignoring the protocol's default.
func samePorts(got, want []corev1.ContainerPort) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		g := got[i]
		if g.Protocol == "" {
			g.Protocol = corev1.ProtocolTCP
		}
		if g != want[i] {
			return false
		}
	}
	return true
}

// injectedFlags are the flags render passes the guard; the values of the upstreams (MCP
// ones included) and the ModelProviders come from the pod's annotations, the rest from
// the manager.
var injectedFlags = []string{flagListen, flagAdminListen, flagControlPlane, flagTokenFile, flagCAFile, flagSnapshotDir,
	flagOpenAIUpstream, flagAnthropicUpstream, flagGeminiUpstream, flagMCPUpstream, flagProvider, flagAuditLog,
	flagTLSCertFile, flagTLSKeyFile}

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

// findGuard returns the guard's container and whether it is an init container.
func findGuard(pod *corev1.Pod) (*corev1.Container, bool) {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == guardv1.ContainerName {
			return &pod.Spec.InitContainers[i], true
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == guardv1.ContainerName {
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
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == guardv1.Audience {
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
