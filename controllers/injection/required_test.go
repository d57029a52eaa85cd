package injection

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// injectedPod is the fixture pod as the injector admits it in a required namespace.
func injectedPod(t *testing.T, opts ...podOption) *corev1.Pod {
	t.Helper()
	d := decide(newPod(opts...), "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
	if d.pod == nil {
		t.Fatalf("the fixture was not injected: deny %q, skip %q", d.deny, d.skip)
	}
	return d.pod
}

func withAppName(name string) podOption {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Name = name }
}

func withAppUser(uid int64) podOption {
	return func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To(uid) }
}

func withAppMount(volume string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: volume, MountPath: "/mnt/" + volume})
	}
}

func withVolume(v corev1.Volume) podOption {
	return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
}

func TestARequiredNamespaceInjectsWhateverThePodClaims(t *testing.T) {
	cases := []struct {
		name    string
		pod     *corev1.Pod
		warning string // substring of a finding, when one is expected
	}{
		{name: "a pod labelled injected=true and annotated enforced is injected all the same",
			pod: newPod(withLabel(guardv1.LabelInjected, "true"), withAnnotation("guardrail.dev/enforced", "true"))},
		{name: "a pod labelled injected=false is injected",
			pod: newPod(withLabel(guardv1.LabelInjected, "false"))},
		{name: "a pod labelled inject=false is injected, and told the label is ignored",
			pod: newPod(withLabel(guardv1.LabelInject, "false")), warning: guardv1.LabelInject + "=false is ignored"},
		{name: "a pod labelled inject=false and injected=true is injected",
			pod: newPod(withLabel(guardv1.LabelInject, "false"), withLabel(guardv1.LabelInjected, "true")), warning: "is ignored"},
		{name: "a pod that writes the injector's warnings itself gets the injector's",
			pod: newPod(withAnnotation(guardv1.AnnotationInjectionWarnings, ReasonInjected+": injected by hand"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			d := decide(tc.pod, "apps", requiredNS, cfg, []byte(testCA), providerChoice{})
			if d.deny != "" || d.pod == nil {
				t.Fatalf("not injected: deny %q, skip %q", d.deny, d.skip)
			}
			if err := VerifyGuard(d.pod, cfg.Guard()); err != nil {
				t.Fatalf("the admitted pod does not carry the guard: %v", err)
			}
			if d.pod.Labels[guardv1.LabelInjected] != labelTrue {
				t.Fatalf("label %s = %q, want the injector's true", guardv1.LabelInjected, d.pod.Labels[guardv1.LabelInjected])
			}
			if v, _ := envValue(&d.pod.Spec.Containers[0], envOpenAIBaseURL); v == "" {
				t.Fatal("the app container was not pointed at the guard")
			}
			warned := false
			for _, f := range d.findings {
				warned = warned || strings.Contains(f.message, tc.warning)
			}
			if tc.warning != "" && !warned {
				t.Fatalf("no finding says %q: %v", tc.warning, d.findings)
			}
			if tc.warning == "" && len(d.findings) > 0 {
				t.Fatalf("unexpected findings: %v", d.findings)
			}
		})
	}
}

func TestARequiredNamespaceRefusesWhatWouldEscapeTheGuard(t *testing.T) {
	uid := strconv.Itoa(guardUID)
	secondToken := corev1.Volume{Name: "mytoken", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: guardv1.Audience, Path: "t"}}},
	}}}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		denied []string // substrings of the denial
	}{
		{name: "an app container named like the guard is refused",
			pod:    newPod(withAppName(guardv1.ContainerName)),
			denied: []string{"a container named " + guardv1.ContainerName + " that is not the injector's guard", `image "app:1"`}},
		{name: "an app container named like the guard is refused even labelled injected=true",
			pod:    newPod(withAppName(guardv1.ContainerName), withLabel(guardv1.LabelInjected, "true")),
			denied: []string{"not the injector's guard"}},
		{name: "an init container named like the guard is refused",
			pod:    newPod(withInitContainer(guardv1.ContainerName)),
			denied: []string{"not the injector's guard", "not a sidecar"}},
		{name: "a pod that shares its process namespace is refused",
			pod:    newPod(func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }),
			denied: []string{"shareProcessNamespace", "/proc"}},
		{name: "an app container running as the guard's user is refused",
			pod:    newPod(withAppUser(guardUID)),
			denied: []string{"container app runs as user " + uid}},
		{name: "a pod whose securityContext runs as the guard's user is refused",
			pod:    newPod(func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](guardUID) }),
			denied: []string{"securityContext runs containers as user " + uid}},
		{name: "an init container running as the guard's user is refused",
			pod: newPod(withInitContainer("migrate"), func(p *corev1.Pod) {
				p.Spec.InitContainers[0].SecurityContext.RunAsUser = ptr.To[int64](guardUID)
			}),
			denied: []string{"container migrate runs as user " + uid}},
		{name: "an app container that mounts the guard's token volume is refused",
			pod:    newPod(withAppMount(volumeToken)),
			denied: []string{"container app mounts volume " + volumeToken}},
		{name: "an app container that mounts the guard's snapshot volume is refused",
			pod:    newPod(withAppMount(volumeSnapshot)),
			denied: []string{"container app mounts volume " + volumeSnapshot}},
		{name: "a second volume projecting a token of the guard's audience is refused",
			pod:    newPod(withVolume(secondToken), withAppMount("mytoken")),
			denied: []string{"volume mytoken projects a token of audience " + guardv1.Audience}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.pod, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
			if d.deny == "" {
				t.Fatalf("admitted (skip %q, injected %v)", d.skip, d.pod != nil)
			}
			for _, want := range append(tc.denied, "requires the guard") {
				if !strings.Contains(d.deny, want) {
					t.Errorf("the denial does not say %q:\n%s", want, d.deny)
				}
			}
		})
	}
}

func TestARequiredNamespaceTellsTheInjectorsGuardFromAHandWrittenOne(t *testing.T) {
	t.Run("the injector's own guard is left as it is (re-invocation)", func(t *testing.T) {
		d := decide(injectedPod(t, withInitContainer("migrate")), "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
		if d.deny != "" || d.pod != nil {
			t.Fatalf("want the pod left alone: deny %q, changed %v", d.deny, d.pod != nil)
		}
	})
	t.Run("the injector's own guard with the apiserver's defaults is left as it is", func(t *testing.T) {
		p := injectedPod(t)
		for i := range p.Spec.Volumes {
			v := &p.Spec.Volumes[i]
			if v.DownwardAPI != nil {
				v.DownwardAPI.DefaultMode = ptr.To[int32](0o644)
				for j := range v.DownwardAPI.Items {
					v.DownwardAPI.Items[j].FieldRef.APIVersion = "v1"
				}
			}
			if v.Projected != nil {
				v.Projected.DefaultMode = ptr.To[int32](0o644)
			}
		}
		g, _ := findGuard(p)
		g.ImagePullPolicy, g.TerminationMessagePath = corev1.PullIfNotPresent, "/dev/termination-log"
		for i := range g.Ports {
			g.Ports[i].Protocol = ""
		}
		for i := range g.Env {
			if f := g.Env[i].ValueFrom; f != nil && f.FieldRef != nil {
				f.FieldRef.APIVersion = "v1"
			}
		}
		// A LimitRange's default CPU limit, added after the injector rendered none.
		g.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
		if d := decide(p, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{}); d.deny != "" || d.pod != nil {
			t.Fatalf("want the pod left alone: deny %q, changed %v", d.deny, d.pod != nil)
		}
	})
	t.Run("a guard exactly like the injector's but not labelled is labelled", func(t *testing.T) {
		p := injectedPod(t)
		delete(p.Labels, guardv1.LabelInjected)
		d := decide(p, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
		if d.deny != "" || d.pod == nil || d.pod.Labels[guardv1.LabelInjected] != labelTrue {
			t.Fatalf("want the label written: deny %q, pod %v", d.deny, d.pod != nil)
		}
		if guards := len(d.pod.Spec.InitContainers); guards != 1 {
			t.Fatalf("%d init containers, want the one guard", guards)
		}
	})

	handWritten := []struct {
		name   string
		edit   func(p *corev1.Pod, guard *corev1.Container)
		denied string
	}{
		{"a guard that subscribes to another control plane is refused", func(_ *corev1.Pod, g *corev1.Container) {
			g.Args[2] = "--" + flagControlPlane + "=https://policy.tenant.example"
		}, "takes arguments other than the ones the injector renders"},
		{"a guard that forwards to another upstream than the pod's annotations say is refused", func(_ *corev1.Pod, g *corev1.Container) {
			g.Args[6] = "--" + flagOpenAIUpstream + "=https://models.tenant.example"
		}, "its arguments are not the ones the injector renders"},
		{"a guard that trusts a CA of the pod's author is refused", func(p *corev1.Pod, _ *corev1.Container) {
			p.Annotations[guardv1.AnnotationCABundle] = "-----BEGIN CERTIFICATE-----\nMIIBtenant\n-----END CERTIFICATE-----\n"
		}, "is not the operator's CA certificate"},
		{"a guard whose CA volume is the pod author's is refused", func(p *corev1.Pod, _ *corev1.Container) {
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == volumeCA {
					p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "my-ca"}}}
				}
			}
		}, "its volume " + volumeCA + " is not the injector's"},
		{"a guard that reads its CA from elsewhere is refused", func(_ *corev1.Pod, g *corev1.Container) {
			g.VolumeMounts[1].MountPath = "/etc/elsewhere"
		}, "mounts volumes other than the injector's"},
		{"a guard another webhook gave a proxy is refused", func(_ *corev1.Pod, g *corev1.Container) {
			g.Env = append(g.Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy.internal:3128"})
		}, `sets the environment variable "HTTPS_PROXY"`},
		{"a guard that runs another image is refused", func(_ *corev1.Pod, g *corev1.Container) {
			g.Image = "tenant/fake-guard:1"
		}, `runs image "tenant/fake-guard:1"`},
		{"a guard beside an app that mounts its token is refused", func(p *corev1.Pod, _ *corev1.Container) {
			withAppMount(volumeToken)(p)
		}, "container app mounts a volume of the guard's"},
		{"a guard beside an app that runs as its user is refused", func(p *corev1.Pod, _ *corev1.Container) {
			withAppUser(guardUID)(p)
		}, "container app runs as user " + strconv.Itoa(guardUID)},
	}
	for _, tc := range handWritten {
		t.Run(tc.name, func(t *testing.T) {
			p := injectedPod(t)
			g, _ := findGuard(p)
			tc.edit(p, g)
			d := decide(p, "apps", requiredNS, testConfig(), []byte(testCA), providerChoice{})
			if !strings.Contains(d.deny, tc.denied) {
				t.Fatalf("denial %q does not say %q", d.deny, tc.denied)
			}
		})
	}
}

func TestAnEnabledNamespaceStillTakesThePodsWord(t *testing.T) {
	// Where injection is opt-in, an opt-out and the mark of a handled pod keep their
	// meaning; what the Events say about such a pod is
	// TestEventsClaimInjectionOnlyForAPodThatCarriesTheGuard.
	for _, p := range []*corev1.Pod{
		newPod(withLabel(guardv1.LabelInject, "false")),
		newPod(withLabel(guardv1.LabelInjected, "true")),
	} {
		if d := decide(p, "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{}); d.pod != nil || d.deny != "" {
			t.Errorf("labels %v, containers %s: want the pod left alone", p.Labels, p.Spec.Containers[0].Name)
		}
	}
	t.Run("an app that mounts the guard's token is not injected, and told why", func(t *testing.T) {
		d := decide(newPod(withAppMount(volumeToken)), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
		if d.pod == nil || guardOf(d.pod) != nil || d.pod.Labels[guardv1.LabelInjected] != labelFalse {
			t.Fatal("want the pod admitted without a guard, labelled injected=false")
		}
		if len(d.findings) != 1 || !strings.Contains(d.findings[0].message, "mounts volume "+volumeToken) {
			t.Fatalf("findings = %v", d.findings)
		}
	})
	t.Run("a pod the control plane would refuse to serve is not injected, and told why", func(t *testing.T) {
		d := decide(newPod(func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{})
		if d.pod == nil || guardOf(d.pod) != nil || len(d.findings) != 1 || !strings.Contains(d.findings[0].message, "process namespace") {
			t.Fatalf("want the pod admitted without a guard and told why, got findings %v", d.findings)
		}
	})
}

func TestTheGuardHoldsNoKubernetesAPIToken(t *testing.T) {
	for _, native := range []bool{true, false} {
		cfg := testConfig()
		cfg.NativeSidecars = native
		p := decide(newPod(), "apps", enabledNS, cfg, []byte(testCA), providerChoice{}).pod
		g := guardOf(p)
		i := slices.IndexFunc(g.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == serviceAccountTokenDir })
		if i < 0 {
			t.Fatalf("native=%v: the guard has no mount at %s, so the ServiceAccount admission plugin gives it the pod's token", native, serviceAccountTokenDir)
		}
		m := g.VolumeMounts[i]
		j := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if !m.ReadOnly || j < 0 || p.Spec.Volumes[j].EmptyDir == nil {
			t.Fatalf("native=%v: the mount at %s is not a read-only emptyDir: %+v", native, serviceAccountTokenDir, m)
		}
		for _, c := range p.Spec.Containers {
			if c.Name != guardv1.ContainerName && slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == serviceAccountTokenDir }) {
				t.Fatalf("native=%v: app container %s was given the guard's empty mount", native, c.Name)
			}
		}
	}
}

func TestTheGuardRunsAsAUserNoCommonImageUses(t *testing.T) {
	// root, the first user of most images (node, bitnami, UBI), the Istio and Linkerd
	// proxies, distroless and Chainguard nonroot (the operator's own image), nobody.
	for _, taken := range []int64{0, 1000, 1001, 1337, 2102, 65532, 65534} {
		if guardUID == taken {
			t.Fatalf("the guard runs as %d, a user common images run as", taken)
		}
	}
	if guardUID < 10000 || guardUID > 65535 {
		t.Fatalf("guardUID %d: want a high user that user namespaces (65536 IDs) can map", guardUID)
	}
	g := guardOf(decide(newPod(), "apps", enabledNS, testConfig(), []byte(testCA), providerChoice{}).pod)
	if sc := g.SecurityContext; *sc.RunAsUser != guardUID || *sc.RunAsGroup != guardUID {
		t.Fatalf("the guard runs as %d:%d, want %d", *sc.RunAsUser, *sc.RunAsGroup, guardUID)
	}
}
