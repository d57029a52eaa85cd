package injection

import (
	"fmt"
	"slices"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
)

// decideRequired is decide for a namespace labelled required: every pod is admitted with
// the injector's guard, or refused saying why. The pod's labels, annotations and container
// names are its author's claims and none of them skips injection:
//   - guardrail.dev/inject=false is ignored, with a warning;
//   - guardrail.dev/injected, whatever its value, is rewritten by render;
//   - a container named like the guard is taken for the injector's own only when it is the
//     one render makes of this pod (notTheInjectors). Any other such container is refused.
//
// It also refuses what would let an app container reach the guard's secrets once it runs:
// the guard's volumes, its UID, and a process namespace shared with it.
func decideRequired(pod *corev1.Pod, namespace string, nsLabels map[string]string, cfg *Config, caPEM []byte, providers providerChoice) decision {
	deny := func(why string) decision { return decision{deny: deniedPrefix(namespace) + why} }
	settings, refused := resolveSettings(pod.Annotations, cfg)
	if len(refused) > 0 {
		msgs := make([]string, len(refused))
		for i, r := range refused {
			msgs[i] = fmt.Sprintf("annotation %s %s", r.annotation, r.reason)
		}
		return deny(strings.Join(msgs, "; "))
	}
	chosen, why := resolveProviders(providers, namespace, nsLabels)
	if why != "" {
		return deny(why)
	}
	settings.providers = chosen
	if why := unsafeForTheGuard(pod); why != "" {
		return deny(why)
	}
	if hasContainer(pod, guardv1.ContainerName) {
		return alreadyGuarded(pod, cfg, settings, caPEM, deny)
	}
	if why := cannotInject(pod, cfg, caPEM); why != "" {
		return deny(why)
	}
	var findings []finding
	if pod.Labels[guardv1.LabelInject] == labelFalse {
		findings = append(findings, finding{ReasonOptOutIgnored, fmt.Sprintf(
			"the label %s=false is ignored: namespace %s requires the guard (%s=%s)",
			guardv1.LabelInject, namespace, guardv1.LabelInjection, injectionRequired)})
	}
	out, findings, err := inject(pod, cfg, settings, caPEM, findings)
	if err != nil {
		return deny(err.Error())
	}
	return decision{pod: out, findings: findings}
}

// alreadyGuarded decides for a pod of a required namespace that has a container named
// ContainerName: left as it is when that is the injector's guard, refused otherwise.
func alreadyGuarded(pod *corev1.Pod, cfg *Config, s guardSettings, caPEM []byte, deny func(string) decision) decision {
	notTheGuard := func(why string) decision {
		return deny(fmt.Sprintf("it has a container named %s that is not the injector's guard: %s", guardv1.ContainerName, why))
	}
	if why := notTheInjectors(pod, cfg, s, caPEM); why != "" {
		return notTheGuard(why)
	}
	if pod.Labels[guardv1.LabelInjected] == labelTrue {
		return decision{skip: "the pod carries the injector's guard already"}
	}
	// The guard is the injector's, whoever wrote it; the label says so.
	out := pod.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[guardv1.LabelInjected] = labelTrue
	return decision{pod: out}
}

// notTheInjectors says why the container named ContainerName in pod is not the guard the
// injector renders for this very pod, or "": it must pass VerifyGuard, and its arguments
// must be those the pod's annotations and ModelProviders give (VerifyGuard accepts any the
// injector could render for some pod), its tracing setting the manager's current one
// (VerifyGuard accepts earlier ones and none) and its CA the operator's. That is the apiserver
// re-invoking the injector (reinvocationPolicy IfNeeded) after another webhook changed the
// pod.
func notTheInjectors(pod *corev1.Pod, cfg *Config, s guardSettings, caPEM []byte) string {
	if err := VerifyGuard(pod, cfg.Guard()); err != nil {
		return err.Error()
	}
	guard, _ := findGuard(pod)
	if cfg.Guard().extProc(guard) {
		// An ExtProc SharedGuard's processor (extproc.go): VerifyGuard has compared it with
		// the rendering, whose arguments are the manager's alone (and the TLS files, when
		// it serves TLS).
		if !slices.Equal(guard.Args, extProcContainer(cfg, s, servesTLS(guard)).Args) {
			return "its arguments are not the ones the operator renders for the Envoy external processor"
		}
		if pod.Annotations[guardv1.AnnotationCABundle] != string(caPEM) {
			return fmt.Sprintf("the annotation %s is not the operator's CA certificate", guardv1.AnnotationCABundle)
		}
		return ""
	}
	// A shared guard's pod (shared.go) is rendered with its proxy on the pod's address;
	// VerifyGuard has checked that such a guard carries no ModelProvider.
	s.shared = listensBeyondLoopback(guard)
	want := guardContainer(cfg, s)
	if s.shared && servesTLS(guard) {
		withTLS(&want) // a shared proxy serving TLS (SharedGuardPodWithTLS)
	}
	if !slices.Equal(guard.Args, want.Args) {
		return "its arguments are not the ones the injector renders for this pod"
	}
	// VerifyGuard accepts earlier tracing settings and none, for pods injected before the
	// manager's changed; a pod being admitted now gets the current one.
	if tracingOf(guard.Env) != s.tracing {
		return "its OTEL_* tracing settings are not the manager's current ones"
	}
	if pod.Annotations[guardv1.AnnotationCABundle] != string(caPEM) {
		return fmt.Sprintf("the annotation %s is not the operator's CA certificate", guardv1.AnnotationCABundle)
	}
	return ""
}

// unsafeForTheGuard says why the guard's secrets (its token, the snapshot that holds
// classifier credentials) would be within an app container's reach in pod, or "". A
// container named like the guard is not an app container here: it is the guard, or it is
// refused for not being it.
func unsafeForTheGuard(pod *corev1.Pod) string {
	if pod.Spec.HostNetwork {
		return "a hostNetwork pod cannot be injected: the guard's ports would be bound on the node"
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		return "shareProcessNamespace is true: its containers could read the guard's files through /proc"
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == guardUID {
		return fmt.Sprintf("its securityContext runs containers as user %d, the guard's", guardUID)
	}
	runsAsGuard := func(name string, sc *corev1.SecurityContext) string {
		if name == guardv1.ContainerName || sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != guardUID {
			return ""
		}
		return fmt.Sprintf("container %s runs as user %d, the guard's", name, guardUID)
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if why := runsAsGuard(list[i].Name, list[i].SecurityContext); why != "" {
				return why
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if why := runsAsGuard(pod.Spec.EphemeralContainers[i].Name, pod.Spec.EphemeralContainers[i].SecurityContext); why != "" {
			return why
		}
	}
	return ""
}
