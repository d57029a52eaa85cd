package injection

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/controlplane"
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
	// ReasonNotInjected (Warning): the pod was opted in and could not be injected.
	ReasonNotInjected = "NotInjected"
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
// manager's configuration and the operator's CA (PEM), what happens to the pod. It reads
// no clock and no cluster; it does not modify pod.
func decide(pod *corev1.Pod, namespace string, nsLabels map[string]string, cfg *Config, caPEM []byte) decision {
	switch {
	case pod.Labels[controlplane.LabelInject] == labelFalse:
		return decision{skip: "the pod opts out (" + controlplane.LabelInject + "=false)"}
	case pod.Labels[controlplane.LabelInjected] != "" || hasContainer(pod, ContainerName):
		return decision{skip: "the pod was already handled by the injector"}
	case systemNamespaces[namespace]:
		return decision{skip: "system namespaces are never injected"}
	case namespace == cfg.OperatorNamespace:
		return decision{skip: "the operator's own namespace is never injected"}
	}
	nsMode := nsLabels[controlplane.LabelInjection]
	required := nsMode == injectionRequired
	if !required && nsMode != injectionEnabled && pod.Labels[controlplane.LabelInject] != labelTrue {
		return decision{skip: "neither the pod nor its namespace opts in"}
	}
	if pod.Spec.HostNetwork {
		if required {
			return decision{deny: deniedPrefix(namespace) + "a hostNetwork pod cannot be injected: the guard's ports would be bound on the node"}
		}
		return decision{skip: "hostNetwork pods are not injected"}
	}

	settings, refused := resolveSettings(pod.Annotations, cfg)
	if required && len(refused) > 0 {
		msgs := make([]string, len(refused))
		for i, r := range refused {
			msgs[i] = fmt.Sprintf("annotation %s %s", r.annotation, r.reason)
		}
		return decision{deny: deniedPrefix(namespace) + strings.Join(msgs, "; ")}
	}
	why := conflicts(pod, cfg)
	if why == "" && len(caPEM) == 0 {
		why = "the operator's CA certificate is not available yet"
	}
	if why != "" {
		return notInjected(pod, namespace, required, why)
	}

	out := pod.DeepCopy()
	var findings []finding
	for _, r := range refused {
		findings = append(findings, finding{ReasonInvalidAnnotation, r.String()})
	}
	findings = append(findings, render(out, cfg, settings, caPEM)...)
	setWarnings(out, findings)
	return decision{pod: out, findings: findings}
}

// notInjected leaves an opted-in pod without a guard, telling why; a required namespace
// refuses it instead.
func notInjected(pod *corev1.Pod, namespace string, required bool, why string) decision {
	if required {
		return decision{deny: deniedPrefix(namespace) + why}
	}
	out := pod.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	// "false" rather than no label: the events controller sees the pod and tells why.
	out.Labels[controlplane.LabelInjected] = labelFalse
	f := []finding{{ReasonNotInjected, "the guard was not injected: " + why}}
	setWarnings(out, f)
	return decision{pod: out, findings: f}
}

func deniedPrefix(namespace string) string {
	return fmt.Sprintf("namespace %s requires the guard (%s=%s) and this pod cannot be injected: ",
		namespace, controlplane.LabelInjection, injectionRequired)
}

// conflicts says why the guard cannot be added to pod without breaking it, or "".
func conflicts(pod *corev1.Pod, cfg *Config) string {
	for _, v := range pod.Spec.Volumes {
		switch v.Name {
		case volumeToken, volumeCA, volumePodInfo, volumeSnapshot:
			return fmt.Sprintf("the pod already has a volume named %s", v.Name)
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
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
		delete(pod.Annotations, AnnotationInjectionWarnings)
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationInjectionWarnings] = b.String()
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
