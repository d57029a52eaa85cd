package injection

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

const testExtProcImage = "registry.test/guardrail/operator-extproc:v1"

// extProcConfig is testConfig with the processor's image and tracing on: the processor
// must be rendered without the guard's OTEL_* settings all the same.
func extProcConfig() *Config {
	cfg := testConfig()
	cfg.ExtProcImage = testExtProcImage
	cfg.Tracing = Tracing{Endpoint: "http://otel.observability.svc:4318"}
	return cfg
}

func extProcRenderer() *Renderer {
	return NewRendererFor(*extProcConfig(), func() ([]byte, error) { return []byte(testCA), nil })
}

// extProcPod is an ExtProc SharedGuard's pod as the operator renders it.
func extProcPod(t *testing.T, annotations map[string]string) *corev1.Pod {
	t.Helper()
	tmpl, refused, err := extProcRenderer().SharedExtProcPod(map[string]string{"app": "gateway"}, annotations)
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedExtProcPod: %v, refused %v", err, refused)
	}
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// extProcTLSPod is the pod of an ExtProc SharedGuard with spec.tls.secretName
// llm-extproc-tls, as the operator renders it.
func extProcTLSPod(t *testing.T) *corev1.Pod {
	t.Helper()
	tmpl, refused, err := extProcRenderer().SharedExtProcPodWithTLS(map[string]string{"app": "gateway"}, nil, "llm-extproc-tls")
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedExtProcPodWithTLS: %v, refused %v", err, refused)
	}
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// With spec.tls the processor's pod is the cleartext one plus exactly: the two TLS flags
// after the others, the Secret's tls.crt and tls.key mounted read-only at one directory,
// and the Secret's volume projecting those two keys only. It verifies, whatever the
// Secret's name, and the injector leaves it alone. Without a Secret the rendering is the
// cleartext one, value for value (no rollout of existing SharedGuards).
func TestSharedExtProcPodWithTLSIsRenderedAndVerified(t *testing.T) {
	plain, tlsPod := extProcPod(t, nil), extProcTLSPod(t)
	again, _, err := extProcRenderer().SharedExtProcPodWithTLS(map[string]string{"app": "gateway"}, nil, "")
	if err != nil || !equality.Semantic.DeepEqual(again.Spec, plain.Spec) || !equality.Semantic.DeepEqual(again.ObjectMeta, plain.ObjectMeta) {
		t.Fatalf("without a Secret the rendering differs from the cleartext processor's (%v)", err)
	}
	c, p := tlsPod.Spec.Containers[0], plain.Spec.Containers[0]
	wantArgs := append(slices.Clone(p.Args), "--tls-cert-file=/var/run/secrets/guardrail.dev/tls/tls.crt",
		"--tls-key-file=/var/run/secrets/guardrail.dev/tls/tls.key")
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q\nwant %q", c.Args, wantArgs)
	}
	wantMounts := append(slices.Clone(p.VolumeMounts), corev1.VolumeMount{Name: "guardrail-tls", MountPath: "/var/run/secrets/guardrail.dev/tls", ReadOnly: true})
	if !equality.Semantic.DeepEqual(c.VolumeMounts, wantMounts) {
		t.Errorf("mounts %v", c.VolumeMounts)
	}
	wantVolume := corev1.Volume{Name: "guardrail-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  "llm-extproc-tls",
		Items:       []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}},
		DefaultMode: ptr.To[int32](0o444),
	}}}
	if !equality.Semantic.DeepEqual(tlsPod.Spec.Volumes, append(guardVolumes(), wantVolume)) {
		t.Errorf("volumes %v", tlsPod.Spec.Volumes)
	}
	c.Args, c.VolumeMounts = p.Args, p.VolumeMounts
	if !equality.Semantic.DeepEqual(c, p) {
		t.Error("the TLS processor differs from the cleartext one in more than its TLS flags and mount")
	}
	if err := VerifyGuard(tlsPod, extProcConfig().Guard()); err != nil {
		t.Fatalf("the rendered TLS processor does not verify: %v", err)
	}
	renamed := tlsPod.DeepCopy()
	renamed.Spec.Volumes[len(renamed.Spec.Volumes)-1].Secret.SecretName = "cert-manager-renamed"
	if err := VerifyGuard(renamed, extProcConfig().Guard()); err != nil {
		t.Errorf("another Secret of the namespace: %v", err)
	}
	if !IsExtProc(tlsPod, extProcConfig().Guard()) {
		t.Error("the TLS processor is not recognized as the processor")
	}
	for _, ns := range []map[string]string{requiredNS, enabledNS, {}} {
		d := decide(tlsPod.DeepCopy(), "apps", ns, extProcConfig(), []byte(testCA), providerChoice{})
		if d.deny != "" || d.pod != nil {
			t.Errorf("namespace %v: the TLS processor's pod was denied (%q) or changed", ns, d.deny)
		}
	}
}

// The processor's pod: guard-extproc alone, from the manager's processor image, gRPC on
// the pod's address (port grpc), the guard's admin port and probes, its policy from the
// control plane with the guard's token and CA, the guard's security context, volumes and
// mounts, no provider, no upstream, no tracing; it verifies, and the injector leaves it
// as it is in every namespace mode.
func TestSharedExtProcPodIsRenderedAndVerified(t *testing.T) {
	pod := extProcPod(t, map[string]string{guardv1.AnnotationMemoryLimit: "512Mi", guardv1.AnnotationCPULimit: "2"})
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		t.Fatalf("containers %d, init containers %d; want the processor alone", len(pod.Spec.Containers), len(pod.Spec.InitContainers))
	}
	c := pod.Spec.Containers[0]
	if c.Name != guardv1.ContainerName || c.Image != testExtProcImage || !slices.Equal(c.Command, []string{"/guard-extproc"}) {
		t.Errorf("container %s runs %s %v", c.Name, c.Image, c.Command)
	}
	wantArgs := []string{
		"--listen=:15081", "--admin-listen=:15090",
		"--control-plane=https://guardrail-control-plane.guardrail-system.svc:9444",
		"--token-file=" + guardv1.TokenPath, "--ca-file=" + guardv1.CAPath, "--snapshot-dir=/var/run/guardrail/snapshot",
	}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q\nwant %q", c.Args, wantArgs)
	}
	wantPorts := []corev1.ContainerPort{{Name: "grpc", ContainerPort: 15081, Protocol: corev1.ProtocolTCP},
		{Name: "guard-admin", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}}
	if !slices.Equal(c.Ports, wantPorts) {
		t.Errorf("ports %v", c.Ports)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "OTEL_") {
			t.Errorf("the processor carries %s: it exports no spans", e.Name)
		}
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == envGOMAXPROCS && e.Value == "2" }) {
		t.Errorf("GOMAXPROCS does not follow the CPU limit: %v", c.Env)
	}
	if c.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("memory limit %v", c.Resources.Limits.Memory())
	}
	guard := guardContainer(extProcConfig(), guardSettings{})
	if !equality.Semantic.DeepEqual(c.SecurityContext, guard.SecurityContext) || !equality.Semantic.DeepEqual(c.VolumeMounts, guard.VolumeMounts) ||
		!equality.Semantic.DeepEqual(c.ReadinessProbe, guard.ReadinessProbe) || !equality.Semantic.DeepEqual(c.StartupProbe, guard.StartupProbe) {
		t.Error("the processor's security context, mounts or probes are not the guard's")
	}
	if !equality.Semantic.DeepEqual(pod.Spec.Volumes, guardVolumes()) || ptr.Deref(pod.Spec.AutomountServiceAccountToken, true) {
		t.Error("the pod's volumes are not the guard's, or it mounts a Kubernetes API token")
	}
	if pod.Labels[guardv1.LabelInjected] != "true" || pod.Annotations[guardv1.AnnotationCABundle] != testCA {
		t.Errorf("the pod lacks the injector's marks: %v %v", pod.Labels, pod.Annotations)
	}
	if err := VerifyGuard(pod, extProcConfig().Guard()); err != nil {
		t.Fatalf("the rendered processor does not verify: %v", err)
	}
	if GuardProviders(pod) != nil {
		t.Errorf("providers %v", GuardProviders(pod))
	}
	// A later release's tag of the processor's image is still the processor.
	upgraded := pod.DeepCopy()
	upgraded.Spec.Containers[0].Image = "registry.test/guardrail/operator-extproc:v2@sha256:0123"
	if err := VerifyGuard(upgraded, extProcConfig().Guard()); err != nil {
		t.Errorf("another tag of the processor's image: %v", err)
	}
	// The namespace names a default ModelProvider; the pod's empty annotation keeps it out.
	choice := requestedProviders(pod.Annotations, map[string]string{guardv1.AnnotationProvider: "openai-prod"}, "apps")
	if len(choice.names) != 0 {
		t.Fatalf("the processor's pod takes its namespace's ModelProvider: %v", choice.names)
	}
	for _, ns := range []map[string]string{requiredNS, enabledNS, {}} {
		d := decide(pod.DeepCopy(), "apps", ns, extProcConfig(), []byte(testCA), choice)
		if d.deny != "" || d.pod != nil {
			t.Errorf("namespace %v: the processor's pod was denied (%q) or changed", ns, d.deny)
		}
	}
	// A manager without the processor's image verifies no processor.
	if err := VerifyGuard(pod, testConfig().Guard()); err == nil {
		t.Error("a manager without --guard-extproc-image verified a processor")
	}
}

func TestSharedExtProcPodRefusals(t *testing.T) {
	if _, _, err := sharedRenderer().SharedExtProcPod(nil, nil); !errors.Is(err, ErrNoExtProcImage) {
		t.Errorf("without a processor image: %v, want ErrNoExtProcImage", err)
	}
	r := NewRendererFor(*extProcConfig(), func() ([]byte, error) { return nil, nil })
	if _, _, err := r.SharedExtProcPod(nil, nil); !errors.Is(err, ErrNoCA) {
		t.Errorf("without a CA: %v, want ErrNoCA", err)
	}
	for _, key := range []string{guardv1.AnnotationOpenAIUpstream, guardv1.AnnotationAuditLog, guardv1.AnnotationMCPUpstreams} {
		_, refused, err := extProcRenderer().SharedExtProcPod(nil, map[string]string{key: "https://api.example.com"})
		if err != nil || len(refused) != 1 || !strings.Contains(refused[0], key) {
			t.Errorf("%s: %v, refused %v", key, err, refused)
		}
	}
}

// TestAMimicOfTheExtProcServerIsRefused plays a tenant with namespace admin who writes a
// pod like the operator's processor pod, changed so that it would leak the policy's
// credentials, enforce less, or call a model with the platform's key: none verifies, so
// the control plane serves it nothing, and the injector refuses it in a namespace that
// requires the guard.
func TestAMimicOfTheExtProcServerIsRefused(t *testing.T) {
	g := extProcConfig().Guard()
	container := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	tlsVolume := func(p *corev1.Pod) *corev1.Volume {
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == volumeTLS {
				return &p.Spec.Volumes[i]
			}
		}
		t.Fatal("no TLS volume")
		return nil
	}
	dropArg := func(c *corev1.Container, prefix string) {
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, prefix) })
	}
	const tlsFlagsWithoutMount = "TLS: the flags without the Secret's mount" // from the cleartext pod
	type mimic struct {
		name string
		edit func(p *corev1.Pod)
		says string
	}
	// Mimics of the processor serving TLS (spec.tls), from its pod.
	tlsMimics := []mimic{
		{"TLS: a tenant-chosen extra mount", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "extra", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "tenant-secret"}}})
			container(p).VolumeMounts = append(container(p).VolumeMounts, corev1.VolumeMount{Name: "extra", MountPath: "/var/run/secrets/guardrail.dev/extra", ReadOnly: true})
		}, "mounts volumes"},
		{"TLS: the Secret mounted at another path", func(p *corev1.Pod) {
			ms := container(p).VolumeMounts
			ms[len(ms)-1].MountPath = "/var/run/guardrail/snapshot/tls"
		}, "mounts volumes"},
		{"TLS: the Secret mounted writable", func(p *corev1.Pod) {
			ms := container(p).VolumeMounts
			ms[len(ms)-1].ReadOnly = false
		}, "mounts volumes"},
		{"TLS: the Secret mounted twice", func(p *corev1.Pod) {
			container(p).VolumeMounts = append(container(p).VolumeMounts, corev1.VolumeMount{Name: volumeTLS, MountPath: "/tls2", ReadOnly: true})
		}, "mounts volumes"},
		{"TLS: every key of the Secret", func(p *corev1.Pod) { tlsVolume(p).Secret.Items = nil }, volumeTLS},
		{"TLS: an extra key (ca.crt)", func(p *corev1.Pod) {
			tlsVolume(p).Secret.Items = append(tlsVolume(p).Secret.Items, corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"})
		}, volumeTLS},
		{"TLS: another key as tls.key", func(p *corev1.Pod) { tlsVolume(p).Secret.Items[1].Key = "apiKey" }, volumeTLS},
		{"TLS: the key under another file name", func(p *corev1.Pod) { tlsVolume(p).Secret.Items[1].Path = "../snapshot/key" }, volumeTLS},
		{"TLS: an optional Secret", func(p *corev1.Pod) { tlsVolume(p).Secret.Optional = ptr.To(true) }, volumeTLS},
		{"TLS: a file mode of the tenant's", func(p *corev1.Pod) { tlsVolume(p).Secret.DefaultMode = ptr.To[int32](0o666) }, volumeTLS},
		{"TLS: an empty Secret name", func(p *corev1.Pod) { tlsVolume(p).Secret.SecretName = "" }, volumeTLS},
		{"TLS: a node directory instead of the Secret", func(p *corev1.Pod) {
			tlsVolume(p).VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes/pki"}}
		}, volumeTLS},
		{"TLS: a projected volume beside the Secret", func(p *corev1.Pod) {
			tlsVolume(p).VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "llm-extproc-tls"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tenant"}}}}}}
		}, volumeTLS},
		{"TLS: the mount without its volume", func(p *corev1.Pod) {
			p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volumeTLS })
		}, "no volume " + volumeTLS},
		{"TLS: the certificate flag pointing at the guard's token", func(p *corev1.Pod) {
			dropArg(container(p), "--tls-cert-file=")
			container(p).Args = append(container(p).Args[:6], "--tls-cert-file="+guardv1.TokenPath, container(p).Args[6])
		}, "arguments"},
		{"TLS: the key flag pointing into the snapshot", func(p *corev1.Pod) {
			dropArg(container(p), "--tls-key-file=")
			container(p).Args = append(container(p).Args, "--tls-key-file=/var/run/guardrail/snapshot/key")
		}, "arguments"},
		{"TLS: the certificate without its key", func(p *corev1.Pod) { dropArg(container(p), "--tls-key-file=") }, "arguments"},
		{"TLS: the flags in the other order", func(p *corev1.Pod) {
			a := container(p).Args
			a[6], a[7] = a[7], a[6]
		}, "arguments"},
		{"TLS: a flag twice", func(p *corev1.Pod) {
			container(p).Args = append(container(p).Args, "--tls-key-file=/var/run/secrets/guardrail.dev/tls/tls.key")
		}, "twice"},
		{tlsFlagsWithoutMount, func(p *corev1.Pod) {
			container(p).Args = append(container(p).Args, "--tls-cert-file=/var/run/secrets/guardrail.dev/tls/tls.crt",
				"--tls-key-file=/var/run/secrets/guardrail.dev/tls/tls.key")
		}, "mounts volumes"},
		{"TLS: the mount without the flags", func(p *corev1.Pod) {
			dropArg(container(p), "--tls-")
		}, "mounts volumes"},
		{"TLS: a client CA flag", func(p *corev1.Pod) {
			container(p).Args = append(container(p).Args, "--tls-client-ca-file=/var/run/secrets/guardrail.dev/tls/tls.crt")
		}, "argument"},
		{"TLS: a second container reading the key", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "reader", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: volumeTLS, MountPath: "/loot"}}})
		}, "reader mounts"},
		{"TLS: the guard's proxy image with the TLS mount", func(p *corev1.Pod) {
			container(p).Image = "guard:test"
			container(p).Command = nil
		}, ""},
	}
	mimics := []mimic{
		{"the tenant's image", func(p *corev1.Pod) { container(p).Image = "registry.test/tenant/extproc:v1" }, "not the guard's"},
		{"the guard's image told to run the processor's command", func(p *corev1.Pod) {
			container(p).Image = "guard:test"
		}, "guard's command"},
		{"a shell instead of the processor", func(p *corev1.Pod) {
			container(p).Command = []string{"/bin/sh", "-c", "cat /var/run/guardrail/snapshot/* | nc tenant 80"}
		}, "processor's command"},
		{"a ModelProvider", func(p *corev1.Pod) { container(p).Args = append(container(p).Args, "--provider=openai-prod") }, "ModelProvider"},
		{"a policy file", func(p *corev1.Pod) { container(p).Args = append(container(p).Args, "--policy-file=/tmp/empty.yaml") }, "argument"},
		{"a decision log into the snapshot", func(p *corev1.Pod) {
			container(p).Args = append(container(p).Args, "--decision-log=/var/run/guardrail/snapshot/log")
		}, "argument"},
		{"pod labels that select nothing", func(p *corev1.Pod) {
			container(p).Args = append(container(p).Args, "--pod-labels=nothing=selected")
		}, "argument"},
		{"the guard's upstream flag", func(p *corev1.Pod) {
			container(p).Args = append(container(p).Args, "--openai-upstream=https://tenant.example")
		}, "argument"},
		{"another listener", func(p *corev1.Pod) { container(p).Args[0] = "--listen=:15082" }, "arguments"},
		{"a loopback listener", func(p *corev1.Pod) { container(p).Args[0] = "--listen=127.0.0.1:15081" }, "arguments"},
		{"the tenant's control plane", func(p *corev1.Pod) {
			container(p).Args[2] = "--control-plane=https://tenant.example:9444"
		}, "arguments"},
		{"a listener twice", func(p *corev1.Pod) { container(p).Args = append(container(p).Args, "--listen=:15082") }, "twice"},
		{"a proxy in its environment", func(p *corev1.Pod) {
			container(p).Env = append(container(p).Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://tenant.example:3128"})
		}, "HTTPS_PROXY"},
		{"gRPC debug logging", func(p *corev1.Pod) {
			container(p).Env = append(container(p).Env, corev1.EnvVar{Name: "GRPC_GO_LOG_SEVERITY_LEVEL", Value: "info"})
		}, "GRPC_GO_LOG_SEVERITY_LEVEL"},
		{"the guard's tracing", func(p *corev1.Pod) {
			container(p).Env = append(container(p).Env, corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://tenant.example:4318"})
		}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"environment from a Secret", func(p *corev1.Pod) {
			container(p).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		}, "ConfigMap or Secret"},
		{"a volume of the tenant's mounted", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "loot", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			container(p).VolumeMounts = append(container(p).VolumeMounts, corev1.VolumeMount{Name: "loot", MountPath: "/loot"})
		}, "mounts volumes"},
		{"the tenant's CA", func(p *corev1.Pod) {
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == volumeCA {
					p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "tenant-ca"}}}
				}
			}
		}, volumeCA},
		{"the snapshot on the node's disk", func(p *corev1.Pod) {
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == volumeSnapshot {
					p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/loot"}}
				}
			}
		}, volumeSnapshot},
		{"a second container reading the snapshot", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "reader", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: volumeSnapshot, MountPath: "/loot"}}})
		}, "reader mounts"},
		{"a second token of the guard's audience", func(p *corev1.Pod) {
			v := guardVolumes()[0]
			v.Name = "spare-token"
			p.Spec.Volumes = append(p.Spec.Volumes, v)
		}, "spare-token"},
		{"a shared process namespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }, "process namespace"},
		{"hostAliases re-pointing the control plane", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"guardrail-control-plane.guardrail-system.svc"}}}
		}, "hostAliases"},
		{"root", func(p *corev1.Pod) { container(p).SecurityContext.RunAsUser = ptr.To[int64](0) }, "security context"},
		{"an exec probe", func(p *corev1.Pod) {
			container(p).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/var/run/guardrail/snapshot/s"}}}}
		}, "runs a command"},
		{"another port", func(p *corev1.Pod) { container(p).Ports[0].ContainerPort = 15082 }, "ports"},
		{"a native sidecar beside an app", func(p *corev1.Pod) {
			c := *container(p)
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers = []corev1.Container{c}
			p.Spec.Containers = []corev1.Container{{Name: "app", Image: "app"}}
		}, "init container"},
		{"an ephemeral container targeting it", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"},
				TargetContainerName: guardv1.ContainerName}}
		}, "debug"},
	}
	for i, tc := range append(mimics, tlsMimics...) {
		t.Run(tc.name, func(t *testing.T) {
			pod := extProcPod(t, nil)
			if i >= len(mimics) && tc.name != tlsFlagsWithoutMount {
				pod = extProcTLSPod(t)
			}
			tc.edit(pod)
			err := VerifyGuard(pod, g)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("VerifyGuard = %v, want a refusal saying %q", err, tc.says)
			}
			d := decide(pod, "apps", requiredNS, extProcConfig(), []byte(testCA), providerChoice{})
			if d.deny == "" {
				t.Errorf("the injector admitted the mimic in a required namespace (skip %q)", d.skip)
			}
		})
	}
}

func TestDefaultExtProcImage(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/guardrail-dev/guardrail-operator:v0.4.0":          "ghcr.io/guardrail-dev/guardrail-operator-extproc:v0.4.0",
		"registry:5000/guardrail/operator:v1@sha256:0123":          "registry:5000/guardrail/operator-extproc:v1",
		"registry:5000/guardrail/operator":                         "registry:5000/guardrail/operator-extproc",
		"ghcr.io/guardrail-dev/guardrail-operator@sha256:abcdef01": "",
		"": "",
	} {
		if got := DefaultExtProcImage(in); got != want {
			t.Errorf("DefaultExtProcImage(%q) = %q, want %q", in, got, want)
		}
	}
}

// The manager's --guard-extproc-image reaches the injector's configuration and the guard
// the cache and the control plane verify against; by default it is the image beside the
// guard's.
func TestExtProcImageFlag(t *testing.T) {
	parse := func(args ...string) (*Flags, Options, error) {
		var f Flags
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		f.Bind(fs)
		if err := fs.Parse(append([]string{"--operator-namespace=ops"}, args...)); err != nil {
			t.Fatal(err)
		}
		o, err := f.options(context.Background(), nil)
		return &f, o, err
	}
	f, o, err := parse("--guard-image=reg.test/op:v1")
	if err != nil || o.Config.ExtProcImage != "reg.test/op-extproc:v1" || f.Guard("ops", "reg.test/op:v1").ExtProcImage != "reg.test/op-extproc:v1" {
		t.Errorf("default: %q, %v", o.Config.ExtProcImage, err)
	}
	f, o, err = parse("--guard-image=reg.test/op:v1", "--guard-extproc-image=mirror.test/extproc:v1")
	if err != nil || o.Config.ExtProcImage != "mirror.test/extproc:v1" || f.Guard("ops", "reg.test/op:v1").ExtProcImage != "mirror.test/extproc:v1" {
		t.Errorf("set: %q, %v", o.Config.ExtProcImage, err)
	}
	if _, _, err := parse("--guard-image=reg.test/op:v1", "--guard-extproc-image=reg.test/op:v2", "--guard-command=/guard-extproc"); err == nil {
		t.Error("a guard indistinguishable from the processor was accepted")
	}
}
