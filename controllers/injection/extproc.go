package injection

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// A SharedGuard in ExtProc mode runs the Envoy external processor (cmd/guard-extproc)
// instead of the guard's proxy: a gateway's ext_proc filter calls it over gRPC, and the
// gateway, not the processor, calls the provider. Its pod is rendered here as a shared
// guard's is, and verified as strictly (VerifyGuard): the processor is the pod's container
// named like the guard, running the manager's --guard-extproc-image at /guard-extproc
// with exactly the arguments, environment, mounts, ports and security context rendered
// below. It takes its policy from the control plane as the guard does (--control-plane,
// --token-file, --ca-file, --snapshot-dir, the same projected token and CA), and nothing
// else: no upstream, no ModelProvider (a processor reachable by others must never hold
// the platform's key), no policy file, no decision log, no tracing. A SharedGuard with
// spec.tls serves gRPC over TLS: its pod mounts the two keys of the Secret named there
// (tls.crt, tls.key) read-only at tlsDir, and the processor takes them as
// --tls-cert-file and --tls-key-file; nothing else of TLS is accepted.

const (
	// ExtProcPort is the ext_proc server's gRPC port, on its pod's address; the Service of
	// an ExtProc SharedGuard serves it on the same port.
	ExtProcPort = 15081
	// PortNameGRPC names it, in the container, the Service and its EndpointSlices.
	PortNameGRPC = "grpc"
	// ExtProcAppProtocol is the Service port's appProtocol: gRPC is HTTP/2 in cleartext.
	ExtProcAppProtocol = "kubernetes.io/h2c"
	// ExtProcTLSAppProtocol is the Service port's appProtocol when the processor (or a
	// shared guard's proxy, shared.go) serves TLS. Kubernetes' standard application protocols (KEP-3726, Gateway API's GEP-1911)
	// name only HTTP/2 in cleartext (kubernetes.io/h2c); HTTP/2 over TLS is the IANA
	// service name https with h2 negotiated by ALPN. Gateways that read appProtocol
	// (Envoy Gateway, kgateway) then take the TLS settings from a BackendTLSPolicy, and
	// meshes pass the gateway's TLS through instead of parsing it as cleartext gRPC.
	ExtProcTLSAppProtocol = "https"
	// volumeTLS is the volume of the Secret the certificate of a shared guard's processor or
	// proxy comes from, mounted read-only at tlsDir; only its tls.crt and tls.key are
	// projected. A sidecar never mounts it.
	volumeTLS = "guardrail-tls"
	tlsDir    = "/var/run/secrets/guardrail.dev/tls"
	// tlsFileMode lets the guard's user (not the files' owner, root) read them; the
	// processor or proxy is alone in its pod.
	tlsFileMode = 0o444
	// The flags of the certificate and key, the processor's and the proxy's.
	flagTLSCertFile = "tls-cert-file"
	flagTLSKeyFile  = "tls-key-file"
	// extProcCommandPath is where the processor's image carries it (the Dockerfile's
	// extproc target, make release's guardrail-extproc image).
	extProcCommandPath = "/guard-extproc"
)

// extProcFlags are the flags rendered for the processor, in order.
var extProcFlags = []string{flagListen, flagAdminListen, flagControlPlane, flagTokenFile, flagCAFile, flagSnapshotDir}

// extProcTLSFlags follow them when the processor serves TLS.
var extProcTLSFlags = []string{flagTLSCertFile, flagTLSKeyFile}

// ErrNoExtProcImage is SharedExtProcPod's error when the manager has no
// --guard-extproc-image.
var ErrNoExtProcImage = errors.New("the manager has no image of the Envoy external processor (--guard-extproc-image), " +
	"so no SharedGuard runs in ExtProc mode")

// DefaultExtProcImage is the processor's image beside the operator's guardImage, as make
// release names it: the repository with -extproc appended, and the same tag
// ("ghcr.io/x/guardrail-operator:v1" → "ghcr.io/x/guardrail-operator-extproc:v1"). A
// guardImage pinned by digest alone names no tag of the processor: "".
func DefaultExtProcImage(guardImage string) string {
	if guardImage == "" {
		return ""
	}
	ref, digest, _ := strings.Cut(guardImage, "@")
	repo := imageRepository(ref)
	tag := strings.TrimPrefix(ref[len(repo):], ":")
	switch {
	case tag != "":
		return repo + "-extproc:" + tag
	case digest != "":
		return ""
	}
	return repo + "-extproc"
}

// extProc reports whether c, the container named like the guard, claims to be the ext_proc
// server rather than the guard: it runs the processor's image (and, should both images
// share a repository, its command).
func (g Guard) extProc(c *corev1.Container) bool {
	if g.ExtProcImage == "" || imageRepository(c.Image) != imageRepository(g.ExtProcImage) {
		return false
	}
	return imageRepository(g.ExtProcImage) != imageRepository(g.Image) || slices.Equal(c.Command, []string{extProcCommandPath})
}

// IsExtProc reports whether pod's container named like the guard is the Envoy external
// processor rather than the guard's proxy; it says which the pod is once VerifyGuard
// accepted it, and nothing before.
func IsExtProc(pod *corev1.Pod, g Guard) bool {
	c, _ := findGuard(pod)
	return c != nil && g.extProc(c)
}

// extProcContainer is the processor's container of an ExtProc SharedGuard's pod: the
// guard's container (name, resources, GOMAXPROCS and GOMEMLIMIT, probes on the admin
// port, mounts, security context) with the processor's image, command, arguments and
// ports, and no tracing (the processor exports no spans). With tls it takes the
// certificate and key mounted from volumeTLS.
func extProcContainer(cfg *Config, s guardSettings, tls bool) corev1.Container {
	s.tracing, s.mcpUpstreams, s.providers, s.auditLog = Tracing{}, nil, nil, false
	c := guardContainer(cfg, s)
	c.Image = cfg.ExtProcImage
	c.Command = []string{extProcCommandPath}
	c.Args = []string{
		"--" + flagListen + "=:" + strconv.Itoa(ExtProcPort),
		"--" + flagAdminListen + "=:" + strconv.Itoa(int(cfg.AdminPort)),
		"--" + flagControlPlane + "=" + cfg.ControlPlaneURL,
		"--" + flagTokenFile + "=" + guardv1.TokenPath,
		"--" + flagCAFile + "=" + guardv1.CAPath,
		"--" + flagSnapshotDir + "=" + snapshotDir,
	}
	if tls {
		withTLS(&c)
	}
	c.Ports = []corev1.ContainerPort{
		{Name: PortNameGRPC, ContainerPort: ExtProcPort, Protocol: corev1.ProtocolTCP},
		{Name: portNameAdmin, ContainerPort: cfg.AdminPort, Protocol: corev1.ProtocolTCP},
	}
	return c
}

// verifyExtProcContainer says why c, a container named like the guard that runs the
// processor's image, is not the processor extProcContainer renders of g, or nil. Only its
// requests and limits are its own (a SharedGuard's spec.resources); everything else must
// be the rendering's, value for value: a regular container (never a sidecar of an app),
// the command, every argument in order, every environment variable (GOMAXPROCS and
// GOMEMLIMIT as for the guard), the mounts, the ports and the security context. A
// processor that takes --tls-cert-file or --tls-key-file is compared with the TLS
// rendering (both flags, at tlsDir, and its mount); its volume is checked with the pod
// (extProcTLSVolume).
func verifyExtProcContainer(c *corev1.Container, init bool, g Guard) error {
	const who = "container " + guardv1.ContainerName + " (the Envoy external processor)"
	switch {
	case init:
		return fmt.Errorf("%s is an init container: the operator renders it as a SharedGuard's regular container only", who)
	case !slices.Equal(c.Command, []string{extProcCommandPath}):
		return fmt.Errorf("%s does not run the processor's command (%s)", who, extProcCommandPath)
	}
	seen := map[string]bool{}
	for _, a := range c.Args {
		name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case ok && strings.HasPrefix(a, "--") && name == flagProvider:
			return fmt.Errorf("%s carries a ModelProvider (--%s): the gateway calls the provider, and a processor others "+
				"reach must never hold the platform's credential", who, flagProvider)
		case !ok || !strings.HasPrefix(a, "--") || !slices.Contains(extProcFlags, name) && !slices.Contains(extProcTLSFlags, name):
			return fmt.Errorf("%s takes an argument the operator does not render for it (%.64q)", who, a)
		case seen[name]:
			return fmt.Errorf("%s takes --%s twice", who, name)
		}
		seen[name] = true
	}
	s := guardSettings{shared: true}
	r := c.Resources
	s.cpuRequest, s.memoryRequest = r.Requests[corev1.ResourceCPU], r.Requests[corev1.ResourceMemory]
	s.cpuLimit, s.memoryLimit = r.Limits[corev1.ResourceCPU], r.Limits[corev1.ResourceMemory]
	cfg := Config{ExtProcImage: g.ExtProcImage, Image: g.Image, Command: g.Command, ProxyPort: g.ProxyPort, AdminPort: g.AdminPort,
		ControlPlaneURL: g.ControlPlaneURL}
	tls := seen[flagTLSCertFile] || seen[flagTLSKeyFile]
	if why := containerDiff(c, extProcContainer(&cfg, s, tls)); why != "" {
		return fmt.Errorf("%s %s", who, why)
	}
	return nil
}

// withTLS makes c, a shared guard's processor or proxy as rendered in cleartext, the one
// that serves TLS: --tls-cert-file and --tls-key-file after every other flag, naming the
// files of its Secret's volume (tlsVolumeFor), mounted read-only at tlsDir after the
// guard's other mounts.
func withTLS(c *corev1.Container) {
	c.Args = append(c.Args, "--"+flagTLSCertFile+"="+tlsDir+"/"+corev1.TLSCertKey, "--"+flagTLSKeyFile+"="+tlsDir+"/"+corev1.TLSPrivateKeyKey)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volumeTLS, MountPath: tlsDir, ReadOnly: true})
}

// tlsVolumeFor is the volume of a shared guard's processor or proxy serving TLS with the
// certificate of the Secret secretName: its tls.crt and tls.key only, readable by the
// guard.
func tlsVolumeFor(secretName string) corev1.Volume {
	return corev1.Volume{Name: volumeTLS, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secretName,
		Items: []corev1.KeyToPath{
			{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey},
			{Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey},
		},
		DefaultMode: ptr.To[int32](tlsFileMode),
	}}}
}

// servesTLS reports whether c, a guard or processor container, mounts the volume of a
// TLS certificate.
func servesTLS(c *corev1.Container) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volumeTLS })
}

// verifyTLSVolume says why the volume a verified guard container mounts as volumeTLS is
// not the one SharedExtProcPodWithTLS and SharedGuardPodWithTLS render, or nil; it is nil
// for a guard that does not mount it (a sidecar, a shared guard in cleartext). The Secret
// is the SharedGuard's choice (spec.tls.secretName, in its own namespace); how it is
// mounted is not: only its tls.crt and tls.key, as files of those names, read-only.
func verifyTLSVolume(pod *corev1.Pod, guard *corev1.Container) error {
	if !servesTLS(guard) {
		return nil
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volumeTLS })
	if i < 0 {
		return fmt.Errorf("the pod has no volume %s, which its guard mounts", volumeTLS)
	}
	v := pod.Spec.Volumes[i]
	if v.Secret == nil || v.Secret.SecretName == "" || !equality.Semantic.DeepEqual(v, tlsVolumeFor(v.Secret.SecretName)) {
		return fmt.Errorf("its volume %s is not the operator's: a Secret's tls.crt and tls.key only, mode %#o, not optional", volumeTLS, tlsFileMode)
	}
	return nil
}

// SharedExtProcPod renders the pod of a SharedGuard in ExtProc mode: labels, the
// injector's marks, and the processor alone (extProcContainer) with the guard's volumes,
// its resources from the annotations the SharedGuard's spec gives (guardrail.dev/cpu and
// the like) on the manager's defaults. Annotations that only the proxy reads (upstreams,
// MCP servers, the audit log) are refused, each with its reason. It returns an error when
// the manager has no processor image (ErrNoExtProcImage), the CA is not written yet
// (ErrNoCA), or the pod would not verify. The processor serves gRPC in cleartext (h2c).
func (r *Renderer) SharedExtProcPod(labels, annotations map[string]string) (corev1.PodTemplateSpec, []string, error) {
	return r.SharedExtProcPodWithTLS(labels, annotations, "")
}

// SharedExtProcPodWithTLS is SharedExtProcPod for a processor that serves gRPC over TLS
// with the certificate and key of the kubernetes.io/tls Secret tlsSecret of the pod's
// namespace (a SharedGuard's spec.tls.secretName), or in cleartext when tlsSecret is "":
// the Secret's tls.crt and tls.key are mounted read-only at tlsDir (tlsVolumeFor)
// and passed as --tls-cert-file and --tls-key-file. The Secret is not read here.
func (r *Renderer) SharedExtProcPodWithTLS(labels, annotations map[string]string, tlsSecret string) (corev1.PodTemplateSpec, []string, error) {
	if r.config.ExtProcImage == "" {
		return corev1.PodTemplateSpec{}, nil, ErrNoExtProcImage
	}
	caPEM, err := r.ca()
	if err != nil || len(caPEM) == 0 {
		return corev1.PodTemplateSpec{}, nil, ErrNoCA
	}
	pod := &corev1.Pod{}
	pod.Labels = maps.Clone(labels)
	pod.Annotations = maps.Clone(annotations)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	var msgs []string
	for _, key := range []string{guardv1.AnnotationOpenAIUpstream, guardv1.AnnotationAnthropicUpstream, guardv1.AnnotationGeminiUpstream,
		guardv1.AnnotationMCPUpstreams, guardv1.AnnotationAuditLog} {
		if _, ok := pod.Annotations[key]; ok {
			msgs = append(msgs, fmt.Sprintf("annotation %s is the proxy's and not used in ExtProc mode", key))
			delete(pod.Annotations, key)
		}
	}
	// Empty on a pod: no provider, whatever the namespace's default.
	pod.Annotations[guardv1.AnnotationProvider] = ""
	s, refused := resolveSettings(pod.Annotations, &r.config)
	for _, f := range refused {
		msgs = append(msgs, f.String())
	}
	pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	pod.Spec.EnableServiceLinks = ptr.To(false)
	markInjected(pod, &r.config, caPEM)
	pod.Spec.Containers = []corev1.Container{extProcContainer(&r.config, s, tlsSecret != "")}
	addGuardVolumes(pod)
	if tlsSecret != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, tlsVolumeFor(tlsSecret))
	}
	if err := VerifyGuard(pod, r.config.Guard()); err != nil {
		return corev1.PodTemplateSpec{}, nil, fmt.Errorf("the shared guard's pod would not verify: %w", err)
	}
	return corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}, msgs, nil
}
