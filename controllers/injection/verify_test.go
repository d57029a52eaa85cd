package injection

import (
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
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
	if err := VerifyGuard(base(), cfg.Guard()); err != nil {
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
		err := VerifyGuard(pod, cfg.Guard())
		if err == nil || !strings.Contains(err.Error(), guardv1.ContainerName) {
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
	if err := VerifyGuard(pod, cfg.Guard()); err != nil {
		t.Fatalf("a debug container targeting the app: %v", err)
	}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, debug(guardv1.ContainerName))
	err := VerifyGuard(pod, cfg.Guard())
	if err == nil || !strings.Contains(err.Error(), "debugger-"+guardv1.ContainerName) {
		t.Errorf("a debug container targeting the guard: VerifyGuard %v, want a refusal naming it", err)
	}
}

// renderedPod is an app pod with the guard as the injector renders it.
func renderedPod(cfg *Config) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	s, _ := resolveSettings(nil, cfg)
	render(pod, cfg, s, []byte("ca"))
	return pod
}

// A tenant who writes the guard by hand (namespace admin) or whose pod another webhook
// changes must not get a guard that sends its token, or the platform's provider key,
// anywhere but where the injector's guard would: the guard is what the injector renders,
// value for value, in a pod that does not re-point its host names.
func TestVerifyGuardRefusesAGuardThatIsNotTheRenderedOneValueForValue(t *testing.T) {
	cfg := testConfig()
	arg := func(flag, value string) func(*corev1.Pod, *corev1.Container) {
		return func(_ *corev1.Pod, c *corev1.Container) {
			for i, a := range c.Args {
				if strings.HasPrefix(a, "--"+flag+"=") {
					c.Args[i] = "--" + flag + "=" + value
				}
			}
		}
	}
	env := func(name, value string) func(*corev1.Pod, *corev1.Container) {
		return func(_ *corev1.Pod, c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod, *corev1.Container)
		want string
	}{
		{"its control plane is the tenant's listener", arg(flagControlPlane, "https://10.0.0.9:9444"), "takes arguments other than"},
		{"its CA file is another path", arg(flagCAFile, "/tmp/ca.crt"), "takes arguments other than"},
		{"its token file is another path", arg(flagTokenFile, "/tmp/token"), "takes arguments other than"},
		{"it listens beyond loopback", arg(flagListen, "0.0.0.0:15080"), "takes arguments other than"},
		{"an upstream with credentials", arg(flagOpenAIUpstream, "https://user:pw@api.example"), "must not carry credentials"},
		{"a Gemini upstream with credentials", arg(flagGeminiUpstream, "https://user:pw@gemini.example"), "must not carry credentials"},
		{"a Gemini upstream that is not http(s)", arg(flagGeminiUpstream, "file:///etc/passwd"), "http or https"},
		{"the Gemini upstream before the others", func(_ *corev1.Pod, c *corev1.Container) {
			n := len(c.Args)
			c.Args[n-1], c.Args[n-2] = c.Args[n-2], c.Args[n-1]
		}, "takes arguments other than"},
		{"a flag given twice", func(_ *corev1.Pod, c *corev1.Container) { c.Args = append(c.Args, c.Args[2]) }, "twice"},
		{"HTTPS_PROXY", env("HTTPS_PROXY", "http://10.0.0.9:3128"), `"HTTPS_PROXY"`},
		{"https_proxy", env("https_proxy", "http://10.0.0.9:3128"), `"https_proxy"`},
		{"SSL_CERT_FILE", env("SSL_CERT_FILE", "/etc/tenant/ca.crt"), `"SSL_CERT_FILE"`},
		{"GODEBUG=http2debug=2", env("GODEBUG", "http2debug=2"), `"GODEBUG"`},
		{"GRPC_GO_LOG_SEVERITY_LEVEL", env("GRPC_GO_LOG_SEVERITY_LEVEL", "info"), `"GRPC_GO_LOG_SEVERITY_LEVEL"`},
		{"GOMAXPROCS not a number", func(_ *corev1.Pod, c *corev1.Container) { setEnv(c, corev1.EnvVar{Name: envGOMAXPROCS, Value: "all"}) }, "GOMAXPROCS"},
		{"a tenant CA mounted", func(p *corev1.Pod, c *corev1.Container) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tenant-ca", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tenant-ca", MountPath: "/etc/ssl/certs"})
		}, "mounts volumes other than the injector's"},
		{"it runs as root", func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.RunAsUser = ptr.To[int64](0) }, "security context"},
		{"it may escalate", func(_ *corev1.Pod, c *corev1.Container) { c.SecurityContext.AllowPrivilegeEscalation = nil }, "security context"},
		{"an exec probe", func(_ *corev1.Pod, c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/guard", "--control-plane=https://x"}}}}
		}, "livenessProbe"},
		{"a postStart hook", func(_ *corev1.Pod, c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/guard"}}}}
		}, "lifecycle hook"},
		{"a working directory", func(_ *corev1.Pod, c *corev1.Container) { c.WorkingDir = "/tmp" }, "working directory"},
		{"a host port", func(_ *corev1.Pod, c *corev1.Container) { c.Ports[0].HostPort = 15080 }, "ports"},
		{"hostAliases re-point the provider", func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"api.openai.com"}}}
		}, "hostAliases"},
		{"dnsPolicy None with the tenant's nameserver", func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.9"}}
		}, "dnsPolicy is None"},
		{"a nameserver added to the cluster's", func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.9"}}
		}, "nameservers or search domains"},
		{"a search domain added", func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"tenant.example"}}
		}, "nameservers or search domains"},
		{"the host's process namespace", func(p *corev1.Pod, _ *corev1.Container) { p.Spec.HostPID = true }, "host's process"},
		{"the host's network", func(p *corev1.Pod, _ *corev1.Container) { p.Spec.HostNetwork = true }, "host's network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := renderedPod(cfg)
			guard, _ := findGuard(pod)
			tc.edit(pod, guard)
			err := VerifyGuard(pod, cfg.Guard())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyGuard = %v, want a refusal saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "10.0.0.9") || strings.Contains(err.Error(), "http2debug") {
				t.Errorf("the refusal quotes a value of the pod's: %v", err)
			}
		})
	}
}

// A guard injected before the injector rendered --gemini-upstream has none (the guard's
// own default is the Gemini API): it still counts, and one rendered with the annotation's
// Gemini upstream counts with it.
func TestVerifyGuardAcceptsAGuardWithoutAGeminiUpstream(t *testing.T) {
	cfg := testConfig()
	pod := renderedPod(cfg)
	guard, _ := findGuard(pod)
	if last := guard.Args[len(guard.Args)-1]; last != "--"+flagGeminiUpstream+"="+cfg.GeminiUpstream {
		t.Fatalf("the guard's last argument is %q", last)
	}
	guard.Args = guard.Args[:len(guard.Args)-1]
	if err := VerifyGuard(pod, cfg.Guard()); err != nil {
		t.Fatalf("a guard injected without --gemini-upstream: %v", err)
	}
	pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{guardv1.AnnotationGeminiUpstream: "https://llm.example.com/gemini"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	s, refused := resolveSettings(pod.Annotations, cfg)
	render(pod, cfg, s, []byte("ca"))
	if err := VerifyGuard(pod, cfg.Guard()); err != nil || len(refused) != 0 {
		t.Fatalf("a guard with the annotation's Gemini upstream: %v %v", err, refused)
	}
}

// What the apiserver, a LimitRange or a mesh changes in the injector's guard without
// changing whom it trusts or what it runs still counts as the guard.
func TestVerifyGuardAcceptsWhatAdmissionMayChange(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod, *corev1.Container)
	}{
		{"another tag of the guard's image (a pod injected before an upgrade)", func(_ *corev1.Pod, c *corev1.Container) { c.Image = "guard:previous" }},
		{"a LimitRange's CPU and memory limits, GOMEMLIMIT left out", func(_ *corev1.Pod, c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			c.Env = slicesDeleteEnv(c.Env, envGOMEMLIMIT)
		}},
		{"a mesh's rewritten HTTP probes", func(_ *corev1.Pod, c *corev1.Container) {
			c.LivenessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Port = "/app-health/guardrail-guard/livez", intstr.FromInt32(15020)
		}},
		{"dnsConfig options", func(p *corev1.Pod, _ *corev1.Container) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
		}},
		{"dnsPolicy Default", func(p *corev1.Pod, _ *corev1.Container) { p.Spec.DNSPolicy = corev1.DNSDefault }},
		{"a pull policy", func(_ *corev1.Pod, c *corev1.Container) { c.ImagePullPolicy = corev1.PullAlways }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := renderedPod(cfg)
			guard, _ := findGuard(pod)
			tc.edit(pod, guard)
			if err := VerifyGuard(pod, cfg.Guard()); err != nil {
				t.Fatalf("VerifyGuard = %v, want the guard", err)
			}
		})
	}
}

func slicesDeleteEnv(env []corev1.EnvVar, name string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if e.Name != name {
			out = append(out, e)
		}
	}
	return out
}
