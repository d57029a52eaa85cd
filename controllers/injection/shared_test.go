package injection

import (
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

func sharedRenderer() *Renderer {
	return NewRendererFor(*testConfig(), func() ([]byte, error) { return []byte(testCA), nil })
}

func sharedPod(t *testing.T, annotations map[string]string) *corev1.Pod {
	t.Helper()
	tmpl, refused, err := sharedRenderer().SharedGuardPod(map[string]string{"app": "chat"}, annotations)
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedGuardPod: %v, refused %v", err, refused)
	}
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// A shared guard's pod is the guard alone, listening on the pod's address, with the
// settings the annotations choose; the injector leaves it as it is in every namespace
// mode, a required one and one whose default ModelProvider it must not take.
func TestSharedGuardPodIsTheInjectorsGuard(t *testing.T) {
	pod := sharedPod(t, map[string]string{guardv1.AnnotationMemoryLimit: "512Mi", guardv1.AnnotationAuditLog: "true"})
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 {
		t.Fatalf("containers %d, init containers %d; want the guard alone", len(pod.Spec.Containers), len(pod.Spec.InitContainers))
	}
	g := pod.Spec.Containers[0]
	if !slices.Contains(g.Args, "--listen=:15080") || !slices.Contains(g.Args, "--audit-log=true") {
		t.Errorf("args %v", g.Args)
	}
	if g.Resources.Limits.Memory().String() != "512Mi" {
		t.Errorf("memory limit %v", g.Resources.Limits.Memory())
	}
	// The namespace names a default ModelProvider; the pod's empty annotation keeps it out.
	choice := requestedProviders(pod.Annotations, map[string]string{guardv1.AnnotationProvider: "openai-prod"}, "apps")
	if len(choice.names) != 0 {
		t.Fatalf("the shared guard's pod takes its namespace's ModelProvider: %v", choice.names)
	}
	for _, ns := range []map[string]string{requiredNS, enabledNS, {}} {
		d := decide(pod.DeepCopy(), "apps", ns, testConfig(), []byte(testCA), choice)
		if d.deny != "" || d.pod != nil {
			t.Errorf("namespace %v: the shared guard's pod was denied (%q) or changed", ns, d.deny)
		}
	}
}

// A guard that listens beyond loopback and attaches a ModelProvider's credential would
// lend the platform's key to whoever reaches it: VerifyGuard refuses it, so the control
// plane serves it nothing and the injector admits no such pod.
func TestAGuardReachableByOthersCarriesNoProvider(t *testing.T) {
	pod := newPod()
	RenderGuard(pod, testConfig().Guard(), true, []byte(testCA), "openai-prod")
	if err := VerifyGuard(pod, testConfig().Guard()); err != nil {
		t.Fatalf("the keyless sidecar does not verify: %v", err)
	}
	g, _ := findGuard(pod)
	for i, a := range g.Args {
		if strings.HasPrefix(a, "--"+flagListen+"=") {
			g.Args[i] = "--" + flagListen + "=:15080"
		}
	}
	err := VerifyGuard(pod, testConfig().Guard())
	if err == nil || !strings.Contains(err.Error(), "beyond loopback") {
		t.Fatalf("VerifyGuard = %v, want the keyless guard on the pod's address refused", err)
	}
	d := decide(pod, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{from: "pod", names: []string{"openai-prod"}})
	if d.deny == "" {
		t.Error("the injector admitted a keyless guard listening beyond loopback in a required namespace")
	}
}

// A shared guard fronts no MCP server, and renders nothing without the operator's CA.
func TestSharedGuardPodRefusals(t *testing.T) {
	if _, _, err := sharedRenderer().SharedGuardPod(nil, map[string]string{guardv1.AnnotationMCPUpstreams: "fs=http://mcp.test/mcp"}); err == nil {
		t.Error("an MCP upstream was accepted")
	}
	r := NewRendererFor(*testConfig(), func() ([]byte, error) { return nil, nil })
	if _, _, err := r.SharedGuardPod(nil, nil); err != ErrNoCA {
		t.Errorf("without a CA: %v, want ErrNoCA", err)
	}
	_, refused, err := sharedRenderer().SharedGuardPod(nil, map[string]string{guardv1.AnnotationCPU: "lots"})
	if err != nil || len(refused) != 1 || !strings.Contains(refused[0], guardv1.AnnotationCPU) {
		t.Errorf("a bad quantity: %v, refused %v", err, refused)
	}
}

func sharedTLSPod(t *testing.T) *corev1.Pod {
	t.Helper()
	tmpl, refused, err := sharedRenderer().SharedGuardPodWithTLS(map[string]string{"app": "chat"}, nil, "llm-guard-tls")
	if err != nil || len(refused) > 0 {
		t.Fatalf("SharedGuardPodWithTLS: %v, refused %v", err, refused)
	}
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}

// With spec.tls a shared guard's pod is the cleartext one plus exactly what the
// processor's gets: the two TLS flags after the others, the Secret's tls.crt and tls.key
// mounted read-only at one directory, and the Secret's volume projecting those two keys
// only. It verifies, whatever the Secret's name, is not taken for the processor, and the
// injector leaves it alone. Without a Secret the rendering is the cleartext one, value for
// value (no rollout of existing SharedGuards).
func TestSharedGuardPodWithTLSIsRenderedAndVerified(t *testing.T) {
	plain, tlsPod := sharedPod(t, nil), sharedTLSPod(t)
	again, _, err := sharedRenderer().SharedGuardPodWithTLS(map[string]string{"app": "chat"}, nil, "")
	if err != nil || !equality.Semantic.DeepEqual(again.Spec, plain.Spec) || !equality.Semantic.DeepEqual(again.ObjectMeta, plain.ObjectMeta) {
		t.Fatalf("without a Secret the rendering differs from the cleartext guard's (%v)", err)
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
		SecretName:  "llm-guard-tls",
		Items:       []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}},
		DefaultMode: ptr.To[int32](0o444),
	}}}
	if !equality.Semantic.DeepEqual(tlsPod.Spec.Volumes, append(slices.Clone(plain.Spec.Volumes), wantVolume)) {
		t.Errorf("volumes %v", tlsPod.Spec.Volumes)
	}
	c.Args, c.VolumeMounts = p.Args, p.VolumeMounts
	if !equality.Semantic.DeepEqual(c, p) {
		t.Error("the TLS guard differs from the cleartext one in more than its TLS flags and mount")
	}
	if err := VerifyGuard(tlsPod, testConfig().Guard()); err != nil {
		t.Fatalf("the rendered TLS guard does not verify: %v", err)
	}
	renamed := tlsPod.DeepCopy()
	renamed.Spec.Volumes[len(renamed.Spec.Volumes)-1].Secret.SecretName = "cert-manager-renamed"
	if err := VerifyGuard(renamed, testConfig().Guard()); err != nil {
		t.Errorf("another Secret of the namespace: %v", err)
	}
	if IsExtProc(tlsPod, testConfig().Guard()) {
		t.Error("the TLS proxy is taken for the Envoy external processor")
	}
	for _, ns := range []map[string]string{requiredNS, enabledNS, {}} {
		d := decide(tlsPod.DeepCopy(), "apps", ns, testConfig(), []byte(testCA), providerChoice{})
		if d.deny != "" || d.pod != nil {
			t.Errorf("namespace %v: the TLS guard's pod was denied (%q) or changed", ns, d.deny)
		}
	}
}

// TestAMimicOfTheSharedProxyServingTLSIsRefused plays a tenant with namespace admin who
// writes a pod like a SharedGuard's proxy serving TLS, or a sidecar told to serve TLS,
// changed so that the guard would read a file of the tenant's choosing as its key, hand
// its key to another container, or serve TLS where the operator renders none: none
// verifies, so the control plane serves it nothing, and the injector refuses it in a
// namespace that requires the guard.
func TestAMimicOfTheSharedProxyServingTLSIsRefused(t *testing.T) {
	g := testConfig().Guard()
	guardOf := func(p *corev1.Pod) *corev1.Container {
		c, _ := findGuard(p)
		return c
	}
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
	const (
		certFlag = "--tls-cert-file=/var/run/secrets/guardrail.dev/tls/tls.crt"
		keyFlag  = "--tls-key-file=/var/run/secrets/guardrail.dev/tls/tls.key"
	)
	addTLS := func(p *corev1.Pod, flags, mount bool) {
		c := guardOf(p)
		if flags {
			c.Args = append(c.Args, certFlag, keyFlag)
		}
		if mount {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volumeTLS, MountPath: "/var/run/secrets/guardrail.dev/tls", ReadOnly: true})
			p.Spec.Volumes = append(p.Spec.Volumes, tlsVolumeFor("app-tls"))
		}
	}
	sidecar := func(native bool) func() *corev1.Pod {
		return func() *corev1.Pod {
			p := newPod()
			RenderGuard(p, g, native, []byte(testCA))
			if err := VerifyGuard(p, g); err != nil {
				t.Fatalf("the sidecar does not verify: %v", err)
			}
			return p
		}
	}
	type mimic struct {
		name string
		pod  func() *corev1.Pod
		edit func(p *corev1.Pod)
		says string
	}
	fromTLS := func() *corev1.Pod { return sharedTLSPod(t) }
	fromPlain := func() *corev1.Pod { return sharedPod(t, nil) }
	mimics := []mimic{
		// A shared proxy serving TLS, changed.
		{"a tenant-chosen extra mount", fromTLS, func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "extra", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "tenant-secret"}}})
			guardOf(p).VolumeMounts = append(guardOf(p).VolumeMounts, corev1.VolumeMount{Name: "extra", MountPath: "/var/run/secrets/guardrail.dev/extra", ReadOnly: true})
		}, "mounts volumes"},
		{"the Secret mounted at another path", fromTLS, func(p *corev1.Pod) {
			ms := guardOf(p).VolumeMounts
			ms[len(ms)-1].MountPath = "/var/run/guardrail/snapshot/tls"
		}, "mounts volumes"},
		{"the Secret mounted writable", fromTLS, func(p *corev1.Pod) {
			ms := guardOf(p).VolumeMounts
			ms[len(ms)-1].ReadOnly = false
		}, "mounts volumes"},
		{"the Secret mounted twice", fromTLS, func(p *corev1.Pod) {
			guardOf(p).VolumeMounts = append(guardOf(p).VolumeMounts, corev1.VolumeMount{Name: volumeTLS, MountPath: "/tls2", ReadOnly: true})
		}, "mounts volumes"},
		{"every key of the Secret", fromTLS, func(p *corev1.Pod) { tlsVolume(p).Secret.Items = nil }, volumeTLS},
		{"an extra key (ca.crt)", fromTLS, func(p *corev1.Pod) {
			tlsVolume(p).Secret.Items = append(tlsVolume(p).Secret.Items, corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"})
		}, volumeTLS},
		{"another key as tls.key", fromTLS, func(p *corev1.Pod) { tlsVolume(p).Secret.Items[1].Key = "apiKey" }, volumeTLS},
		{"the key under another file name", fromTLS, func(p *corev1.Pod) { tlsVolume(p).Secret.Items[1].Path = "../snapshot/key" }, volumeTLS},
		{"an optional Secret", fromTLS, func(p *corev1.Pod) { tlsVolume(p).Secret.Optional = ptr.To(true) }, volumeTLS},
		{"a file mode of the tenant's", fromTLS, func(p *corev1.Pod) { tlsVolume(p).Secret.DefaultMode = ptr.To[int32](0o666) }, volumeTLS},
		{"an empty Secret name", fromTLS, func(p *corev1.Pod) { tlsVolume(p).Secret.SecretName = "" }, volumeTLS},
		{"a node directory instead of the Secret", fromTLS, func(p *corev1.Pod) {
			tlsVolume(p).VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes/pki"}}
		}, volumeTLS},
		{"a projected volume beside the Secret", fromTLS, func(p *corev1.Pod) {
			tlsVolume(p).VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "llm-guard-tls"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tenant"}}}}}}
		}, volumeTLS},
		{"the mount without its volume", fromTLS, func(p *corev1.Pod) {
			p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volumeTLS })
		}, "no volume " + volumeTLS},
		{"the certificate flag pointing at the guard's token", fromTLS, func(p *corev1.Pod) {
			dropArg(guardOf(p), "--tls-cert-file=")
			guardOf(p).Args = append(guardOf(p).Args, "--tls-cert-file="+guardv1.TokenPath)
		}, "arguments"},
		{"the key flag pointing into the snapshot", fromTLS, func(p *corev1.Pod) {
			dropArg(guardOf(p), "--tls-key-file=")
			guardOf(p).Args = append(guardOf(p).Args, "--tls-key-file=/var/run/guardrail/snapshot/key")
		}, "arguments"},
		{"the certificate without its key", fromTLS, func(p *corev1.Pod) { dropArg(guardOf(p), "--tls-key-file=") }, "arguments"},
		{"the key without its certificate", fromTLS, func(p *corev1.Pod) { dropArg(guardOf(p), "--tls-cert-file=") }, "arguments"},
		{"the flags in the other order", fromTLS, func(p *corev1.Pod) {
			a := guardOf(p).Args
			a[len(a)-2], a[len(a)-1] = a[len(a)-1], a[len(a)-2]
		}, "arguments"},
		{"the flags before the others", fromTLS, func(p *corev1.Pod) {
			a := guardOf(p).Args
			guardOf(p).Args = append(slices.Clone(a[len(a)-2:]), a[:len(a)-2]...)
		}, "arguments"},
		{"a flag twice", fromTLS, func(p *corev1.Pod) { guardOf(p).Args = append(guardOf(p).Args, keyFlag) }, "twice"},
		{"a client CA flag", fromTLS, func(p *corev1.Pod) {
			guardOf(p).Args = append(guardOf(p).Args, "--tls-client-ca-file=/var/run/secrets/guardrail.dev/tls/tls.crt")
		}, "argument"},
		{"the mount without the flags", fromTLS, func(p *corev1.Pod) { dropArg(guardOf(p), "--tls-") }, "mounts volumes"},
		{"a second container reading the key", fromTLS, func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "reader", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: volumeTLS, MountPath: "/loot"}}})
		}, "reader mounts"},
		{"a ModelProvider beside TLS", fromTLS, func(p *corev1.Pod) {
			a := guardOf(p).Args
			guardOf(p).Args = append(slices.Clone(a[:len(a)-2]), append([]string{"--provider=openai-prod"}, a[len(a)-2:]...)...)
		}, "ModelProvider"},
		{"the processor's image with the proxy's TLS pod", fromTLS, func(p *corev1.Pod) {
			guardOf(p).Image = "guard-extproc:test"
			guardOf(p).Command = []string{"/guard-extproc"}
		}, ""},
		// A cleartext shared proxy given part of TLS.
		{"a cleartext shared proxy with the flags alone", fromPlain, func(p *corev1.Pod) { addTLS(p, true, false) }, "mounts volumes"},
		{"a cleartext shared proxy with the mount alone", fromPlain, func(p *corev1.Pod) { addTLS(p, false, true) }, "mounts volumes"},
		// Sidecars (on loopback, beside an app) never serve TLS.
		{"a sidecar with the TLS flags and mount", sidecar(false), func(p *corev1.Pod) { addTLS(p, true, true) }, "loopback"},
		{"a native sidecar with the TLS flags and mount", sidecar(true), func(p *corev1.Pod) { addTLS(p, true, true) }, "loopback"},
		{"a sidecar with the TLS flags alone", sidecar(false), func(p *corev1.Pod) { addTLS(p, true, false) }, "loopback"},
		{"a sidecar with the certificate flag alone", sidecar(false), func(p *corev1.Pod) {
			guardOf(p).Args = append(guardOf(p).Args, certFlag)
		}, "loopback"},
		{"a sidecar with the TLS mount alone", sidecar(false), func(p *corev1.Pod) { addTLS(p, false, true) }, "mounts volumes"},
		{"a native sidecar with the TLS mount alone", sidecar(true), func(p *corev1.Pod) { addTLS(p, false, true) }, "mounts volumes"},
		{"an app container mounting the sidecar's TLS volume", sidecar(false), func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, tlsVolumeFor("app-tls"))
			app := &p.Spec.Containers[slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "app" })]
			app.VolumeMounts = append(app.VolumeMounts, corev1.VolumeMount{Name: volumeTLS, MountPath: "/tls"})
		}, "app mounts"},
	}
	for _, tc := range mimics {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod()
			tc.edit(pod)
			err := VerifyGuard(pod, g)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("VerifyGuard = %v, want a refusal saying %q", err, tc.says)
			}
			d := decide(pod, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
			if d.deny == "" {
				t.Errorf("the injector admitted the mimic in a required namespace (skip %q)", d.skip)
			}
		})
	}
}
