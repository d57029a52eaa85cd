package injection

import (
	"fmt"
	"slices"
	"strings"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	corev1 "k8s.io/api/core/v1"
)

// Event reasons, used in AnnotationInjectionWarnings lines and as the Events' reasons.
const (
	// ReasonInjected (Normal): the guard was injected.
	ReasonInjected = "Injected"
	// ReasonInvalidAnnotation (Warning): an annotation value was refused; the default is used.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonBaseURLKept (Warning): an app container sets its own provider base URL, which
	// is kept; its traffic may bypass the guard.
	ReasonBaseURLKept = "BaseURLKept"
	// ReasonNotInjected (Warning): the pod was opted in and could not be injected, or it is
	// labelled injected and its spec does not carry the injector's guard.
	ReasonNotInjected = "NotInjected"
	// ReasonOptOutIgnored (Warning): the pod is labelled guardrail.dev/inject=false in a
	// namespace labelled required; the label is ignored and the guard injected.
	ReasonOptOutIgnored = "OptOutIgnored"
)

// finding is something the injector tells the user about a pod: an admission warning now,
// an Event on the pod once it exists.
type finding struct {
	reason  string
	message string
}

// decision is what the handler answers for one pod.
type decision struct {
	// skip says why the pod is left as it is (nothing to tell the user).
	skip string
	// deny, when set, refuses the pod (namespaces labelled required).
	deny string
	// pod is the injected (or marked as not injected) pod, when it changes.
	pod *corev1.Pod
	// findings become admission warnings and, through the pod's annotations, Events.
	findings []finding
}

// decide is the injector: from the pod as submitted, its namespace's name and labels, the
// manager's configuration, the operator's CA (PEM) and the ModelProviders the pod asks for
// (read by the handler), what happens to the pod. It reads no clock and no cluster; it
// does not modify pod.
//
// In a namespace labelled required nothing the pod's author writes keeps the guard out
// (decideRequired). Elsewhere the pod's labels are the opt-in and opt-out they are meant to
// be: inject=false opts out, and a pod labelled injected, or with a container named like
// the guard, is taken as handled already (re-invocation).
func decide(pod *corev1.Pod, namespace string, nsLabels map[string]string, cfg *Config, caPEM []byte, providers providerChoice) decision {
	nsMode := nsLabels[guardv1.LabelInjection]
	switch {
	case systemNamespaces[namespace]:
		return decision{skip: "system namespaces are never injected"}
	case namespace == cfg.OperatorNamespace:
		return decision{skip: "the operator's own namespace is never injected"}
	case nsMode == injectionRequired:
		return decideRequired(pod, namespace, nsLabels, cfg, caPEM, providers)
	case hasContainer(pod, guardv1.ContainerName):
		return handWritten(pod, namespace, nsLabels, cfg, caPEM, providers)
	case pod.Labels[guardv1.LabelInject] == labelFalse:
		return decision{skip: "the pod opts out (" + guardv1.LabelInject + "=false)"}
	case pod.Labels[guardv1.LabelInjected] != "":
		return decision{skip: "the pod was already handled by the injector"}
	case nsMode != injectionEnabled && pod.Labels[guardv1.LabelInject] != labelTrue:
		return decision{skip: "neither the pod nor its namespace opts in"}
	case pod.Spec.HostNetwork:
		return decision{skip: "hostNetwork pods are not injected"}
	}

	settings, refused := resolveSettings(pod.Annotations, cfg)
	if why := cannotInject(pod, cfg, caPEM); why != "" {
		return notInjected(pod, why)
	}
	chosen, why := resolveProviders(providers, namespace, nsLabels)
	if why != "" {
		return decision{deny: providerDenial(why)}
	}
	settings.providers = chosen
	var findings []finding
	for _, r := range refused {
		findings = append(findings, finding{ReasonInvalidAnnotation, r.String()})
	}
	out, findings, err := inject(pod, cfg, settings, caPEM, findings)
	if err != nil {
		// The control plane serves only guards that pass VerifyGuard: a guard it would
		// refuse is not worth adding.
		return notInjected(pod, err.Error())
	}
	return decision{pod: out, findings: findings}
}

// handWritten decides for a pod outside a required namespace that has a container named
// ContainerName: the injector's own guard (the apiserver re-invoking the injector) is left
// as it is; any other is refused, whatever the pod's labels say. Such a container would
// send the guard's token wherever its flags point, and a guard the control plane refuses
// is no guard: better said at admission than found later.
func handWritten(pod *corev1.Pod, namespace string, nsLabels map[string]string, cfg *Config, caPEM []byte, providers providerChoice) decision {
	refuse := func(why string) decision {
		return decision{deny: fmt.Sprintf("the pod has a container named %s that is not the guard the injector renders for it: %s", guardv1.ContainerName, why)}
	}
	settings, _ := resolveSettings(pod.Annotations, cfg)
	chosen, why := resolveProviders(providers, namespace, nsLabels)
	if why != "" {
		return refuse(why)
	}
	settings.providers = chosen
	if why := notTheInjectors(pod, cfg, settings, caPEM); why != "" {
		return refuse(why)
	}
	return decision{skip: "the pod carries the injector's guard already"}
}

// inject renders the guard into a copy of pod and checks the result as the control plane
// will (VerifyGuard): the pod's own spec may share what is the guard's alone.
func inject(pod *corev1.Pod, cfg *Config, s guardSettings, caPEM []byte, findings []finding) (*corev1.Pod, []finding, error) {
	out := pod.DeepCopy()
	findings = append(findings, render(out, cfg, s, caPEM)...)
	if err := VerifyGuard(out, cfg.Guard()); err != nil {
		return nil, nil, err
	}
	setWarnings(out, findings)
	return out, findings, nil
}

// cannotInject says why the guard cannot be added to pod, or "".
func cannotInject(pod *corev1.Pod, cfg *Config, caPEM []byte) string {
	if why := conflicts(pod, cfg); why != "" {
		return why
	}
	if len(caPEM) == 0 {
		return "the operator's CA certificate is not available yet"
	}
	return ""
}

// notInjected leaves an opted-in pod without a guard, telling why (a required namespace
// refuses it instead).
func notInjected(pod *corev1.Pod, why string) decision {
	out := pod.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	// "false" rather than no label: the events controller sees the pod and tells why.
	out.Labels[guardv1.LabelInjected] = labelFalse
	f := []finding{{ReasonNotInjected, "the guard was not injected: " + why}}
	setWarnings(out, f)
	return decision{pod: out, findings: f}
}

func deniedPrefix(namespace string) string {
	return fmt.Sprintf("namespace %s requires the guard (%s=%s) and this pod cannot be injected: ",
		namespace, guardv1.LabelInjection, injectionRequired)
}

// guardVolumeNames are the volumes render adds; they are the guard's alone.
var guardVolumeNames = []string{volumeToken, volumeCA, volumePodInfo, volumeSnapshot, volumeNoAPIToken}

// conflicts says why the guard cannot be added to pod without breaking it or sharing what
// is the guard's, or "".
func conflicts(pod *corev1.Pod, cfg *Config) string {
	for _, v := range pod.Spec.Volumes {
		if slices.Contains(guardVolumeNames, v.Name) {
			return fmt.Sprintf("the pod already has a volume named %s", v.Name)
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			// A mount of a volume the pod does not define yet would be valid once render
			// has added it, and would hand the app the guard's token or snapshot.
			for _, m := range list[i].VolumeMounts {
				if slices.Contains(guardVolumeNames, m.Name) {
					return fmt.Sprintf("container %s mounts volume %s, which is the guard's", list[i].Name, m.Name)
				}
			}
			for _, p := range list[i].Ports {
				if p.ContainerPort == cfg.ProxyPort || p.ContainerPort == cfg.AdminPort {
					return fmt.Sprintf("container %s uses port %d, which the guard needs", list[i].Name, p.ContainerPort)
				}
				if p.Name == portNameProxy || p.Name == portNameAdmin {
					return fmt.Sprintf("container %s has a port named %s, which the guard needs", list[i].Name, p.Name)
				}
			}
		}
	}
	return ""
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return true
			}
		}
	}
	return false
}

// setWarnings records the findings on the pod for the events controller, one a line, or
// removes a value the user set.
func setWarnings(pod *corev1.Pod, findings []finding) {
	var b strings.Builder
	for _, f := range findings {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.reason)
		b.WriteString(": ")
		b.WriteString(f.message)
	}
	if b.Len() == 0 {
		delete(pod.Annotations, guardv1.AnnotationInjectionWarnings)
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[guardv1.AnnotationInjectionWarnings] = b.String()
}

// parseWarnings reads what setWarnings wrote.
func parseWarnings(value string) []finding {
	var out []finding
	for _, line := range strings.Split(value, "\n") {
		reason, message, ok := strings.Cut(line, ": ")
		if !ok || reason == "" {
			continue
		}
		out = append(out, finding{reason, message})
	}
	return out
}
