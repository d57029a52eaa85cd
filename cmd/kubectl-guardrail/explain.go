package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// defaultOperatorNamespace is where the chart installs the operator, and so the guards'
// Leases.
const defaultOperatorNamespace = "guardrail-system"

type explainOptions struct {
	kube              *genericclioptions.ConfigFlags
	operatorNamespace string
	output            string
	now               func() time.Time
}

func newExplainCommand(streams genericiooptions.IOStreams, kubeFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &explainOptions{kube: kubeFlags, now: time.Now}
	cmd := &cobra.Command{
		Use:   "explain pod NAME [-n NAMESPACE]",
		Short: "Which Guardrails apply to a pod and why, the effective rule per boundary, and whether its guard enforces them",
		Long: `For one pod: the ClusterGuardrails and Guardrails that select it and why (which
selector and namespaceSelector matched), those of its namespace that do not and why not, the
effective rule at each boundary once they are composed (the strongest enforced action, who
enforces and who only reports, whether a failed evaluation refuses), the generation of each
that the pod's guard acknowledged, and whether the pod enforces them now.`,
		Example: `  kubectl guardrail explain pod chat-7d9f -n demo
  kubectl guardrail explain pod chat-7d9f -n demo -o yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 || args[0] != "pod" && args[0] != "pods" && args[0] != "po" {
				return fmt.Errorf("usage: kubectl guardrail explain pod NAME [-n NAMESPACE]")
			}
			return nil
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"pod"}, cobra.ShellCompDirectiveNoFileComp
			}
			if len(args) != 1 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			c, err := newClients(o.kube)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			pods, err := c.kube.CoreV1().Pods(c.namespace).List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names := make([]string, len(pods.Items))
			for i := range pods.Items {
				names[i] = pods.Items[i].Name
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFormat(o.output, "table", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClients(o.kube)
			if err != nil {
				return err
			}
			ex, err := o.explain(cmd.Context(), c, args[1])
			if err != nil {
				return err
			}
			if o.output != "table" {
				return printStructured(streams.Out, o.output, ex)
			}
			writeExplanation(streams.Out, ex)
			return nil
		},
	}
	addKubeFlags(cmd, kubeFlags)
	cmd.Flags().StringVar(&o.operatorNamespace, "operator-namespace", defaultOperatorNamespace, "the namespace the operator runs in, which holds the guards' Leases")
	addOutputFlag(cmd, &o.output, "table")
	return cmd
}

// explanation is what `explain pod` reports.
type explanation struct {
	Pod             podInfo           `json:"pod"`
	NamespaceLabels map[string]string `json:"namespaceLabels"`
	Guard           guardInfo         `json:"guard"`
	// Enforcing is true when the pod's guard is live and enforces the latest generation of
	// every policy that selects the pod; EnforcingWhy says why not.
	Enforcing    bool          `json:"enforcing"`
	EnforcingWhy string        `json:"enforcingWhy,omitempty"`
	Selecting    []policyMatch `json:"selecting"`
	NotSelecting []policyMatch `json:"notSelecting"`
	Boundaries   []boundary    `json:"boundaries"`
}

type podInfo struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Phase     string            `json:"phase"`
	Labels    map[string]string `json:"labels"`
}

type guardInfo struct {
	// Injected: the pod has the guard's container.
	Injected bool `json:"injected"`
	// Ready: the guard's container is ready (its startup probe passes once it holds a
	// policy).
	Ready bool `json:"ready"`
	// Lease is the guard's Lease in the operator's namespace, "" when there is none.
	Lease string `json:"lease,omitempty"`
	// Live: the guard renewed its Lease within the Lease's duration.
	Live    bool       `json:"live"`
	Expires *time.Time `json:"expires,omitempty"`
	// Refused is the last policy version the guard refused, and why.
	Refused string `json:"refused,omitempty"`
}

// policyMatch is one Guardrail or ClusterGuardrail and how it stands to the pod.
type policyMatch struct {
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Mode       string `json:"mode"`
	Generation int64  `json:"generation"`
	Ready      string `json:"ready"`
	// Why it selects the pod, or not.
	Why string `json:"why"`
	// Acknowledged is the generation the pod's guard enforces, nil when none.
	Acknowledged *int64 `json:"acknowledged,omitempty"`
	// CompileError says why the plugin could not compile it (its effect is then unknown).
	CompileError string `json:"compileError,omitempty"`

	compiled *policy.Guardrail
}

// boundary is the effective rule at one phase (policy.Compose).
type boundary struct {
	Phase string `json:"phase"`
	// Action is the strongest action an enforcing policy takes on a match (Allow when none
	// enforces).
	Action string `json:"action"`
	// OnFailure is Closed when a failed evaluation refuses the content.
	OnFailure  string               `json:"onFailure"`
	Enforcing  []string             `json:"enforcing"`
	Reporting  []string             `json:"reporting"`
	Categories map[string]catEffect `json:"categories,omitempty"`
}

type catEffect struct {
	Action    string `json:"action"`
	Guardrail string `json:"guardrail"`
}

func (o *explainOptions) explain(ctx context.Context, c *clients, name string) (*explanation, error) {
	pod, err := c.kube.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %s not found in namespace %s (give the pod's namespace with -n)", name, c.namespace)
	}
	if err != nil {
		return nil, forbiddenHint(err, "get pods")
	}
	ex := &explanation{Pod: podInfo{Namespace: pod.Namespace, Name: pod.Name, Phase: string(pod.Status.Phase), Labels: pod.Labels},
		Selecting: []policyMatch{}, NotSelecting: []policyMatch{}, Boundaries: []boundary{}}
	if ex.Pod.Labels == nil {
		ex.Pod.Labels = map[string]string{}
	}
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, pod.Namespace, metav1.GetOptions{})
	if err != nil {
		return nil, forbiddenHint(err, "get namespace "+pod.Namespace)
	}
	ex.NamespaceLabels = ns.Labels
	if ex.NamespaceLabels == nil {
		ex.NamespaceLabels = map[string]string{}
	}
	if err := o.matchPolicies(ctx, c, pod, ex); err != nil {
		return nil, err
	}
	ack, err := o.readGuard(ctx, c, pod, ex)
	if err != nil {
		return nil, err
	}
	for i := range ex.Selecting {
		m := &ex.Selecting[i]
		key := m.Name
		if m.Kind == policy.KindClusterGuardrail {
			key = policy.Key("", m.Name)
		}
		if gen, ok := ack.Enforced[key]; ok {
			m.Acknowledged = &gen
		} else if gen, ok := ack.Enforced[m.Name]; ok {
			m.Acknowledged = &gen
		}
	}
	ex.Enforcing, ex.EnforcingWhy = enforcing(ex)
	ex.Boundaries = boundaries(ex.Selecting)
	return ex, nil
}

// matchPolicies sorts the pod's namespace's Guardrails and the ClusterGuardrails into
// those that select the pod and those that do not, and compiles the former.
func (o *explainOptions) matchPolicies(ctx context.Context, c *clients, pod *corev1.Pod, ex *explanation) error {
	cgs, err := c.listClusterGuardrails(ctx)
	if err != nil {
		return err
	}
	var ccs []api.ClusterClassifier
	if len(cgs) > 0 {
		if ccs, err = c.listClusterClassifiers(ctx); err != nil {
			return err
		}
	}
	for i := range cgs {
		g := &cgs[i]
		m := policyMatch{Kind: policy.KindClusterGuardrail, Name: g.Name, Mode: string(g.Spec.Mode), Generation: g.Generation,
			Ready: readyOf(g.Status.Conditions)}
		nsOK, nsWhy := selectorMatch(g.Spec.NamespaceSelector, labels.Set(ex.NamespaceLabels))
		podOK, podWhy := selectorMatch(g.Spec.Selector, labels.Set(ex.Pod.Labels))
		switch {
		case !nsOK:
			m.Why = "namespaceSelector: " + nsWhy + " for namespace " + pod.Namespace
			ex.NotSelecting = append(ex.NotSelecting, m)
			continue
		case !podOK:
			m.Why = "selector: " + podWhy
			ex.NotSelecting = append(ex.NotSelecting, m)
			continue
		}
		m.Why = "namespaceSelector " + describeMatch(nsWhy, "every namespace") + "; selector " + describeMatch(podWhy, "every injected pod")
		var cl *api.ClusterClassifier
		for j := range ccs {
			if ccs[j].Name == g.Spec.ClassifierRef.Name {
				cl = &ccs[j]
			}
		}
		if cl == nil {
			m.CompileError = "ClusterClassifier " + g.Spec.ClassifierRef.Name + " not found"
		} else if cc, err := policykube.CompileClusterClassifier(cl, ""); err != nil {
			m.CompileError = err.Error()
		} else if m.compiled, err = policykube.CompileClusterGuardrail(g, cc); err != nil {
			m.CompileError = err.Error()
		}
		ex.Selecting = append(ex.Selecting, m)
	}
	gs, err := c.listGuardrails(ctx, pod.Namespace)
	if err != nil {
		return err
	}
	var cls []api.Classifier
	if len(gs) > 0 {
		if cls, err = c.listClassifiers(ctx, pod.Namespace); err != nil {
			return err
		}
	}
	for i := range gs {
		g := &gs[i]
		m := policyMatch{Kind: "Guardrail", Namespace: g.Namespace, Name: g.Name, Mode: string(g.Spec.Mode), Generation: g.Generation,
			Ready: readyOf(g.Status.Conditions)}
		ok, why := selectorMatch(g.Spec.Selector, labels.Set(ex.Pod.Labels))
		if !ok {
			m.Why = "selector: " + why
			ex.NotSelecting = append(ex.NotSelecting, m)
			continue
		}
		m.Why = "selector " + describeMatch(why, "every injected pod of the namespace")
		var cl *api.Classifier
		for j := range cls {
			if cls[j].Name == g.Spec.ClassifierRef.Name {
				cl = &cls[j]
			}
		}
		if cl == nil {
			m.CompileError = "Classifier " + g.Spec.ClassifierRef.Name + " not found in " + g.Namespace
		} else if cc, err := policykube.CompileClassifier(cl, ""); err != nil {
			m.CompileError = err.Error()
		} else if m.compiled, err = policykube.CompileGuardrail(g, cc); err != nil {
			m.CompileError = err.Error()
		}
		ex.Selecting = append(ex.Selecting, m)
	}
	return nil
}

func describeMatch(why, empty string) string {
	if why == "empty" {
		return "unset or empty: " + empty
	}
	return why + " matched"
}

func readyOf(conds []metav1.Condition) string {
	if c := apimeta.FindStatusCondition(conds, api.ConditionReady); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

// readGuard reads the pod's guard container and its Lease.
func (o *explainOptions) readGuard(ctx context.Context, c *clients, pod *corev1.Pod, ex *explanation) (guardv1.Ack, error) {
	for _, ctr := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		ex.Guard.Injected = ex.Guard.Injected || ctr.Name == guardv1.ContainerName
	}
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if st.Name == guardv1.ContainerName {
			ex.Guard.Ready = st.Ready
		}
	}
	lease, err := c.kube.CoordinationV1().Leases(o.operatorNamespace).Get(ctx, guardv1.LeaseName(string(pod.UID)), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return guardv1.Ack{}, nil
	case apierrors.IsForbidden(err):
		return guardv1.Ack{}, fmt.Errorf("reading the guard's Lease in %s: %w (the Leases are the operator's; check with: kubectl auth can-i get leases -n %s)", o.operatorNamespace, err, o.operatorNamespace)
	case err != nil:
		return guardv1.Ack{}, err
	}
	var renewed *time.Time
	var d time.Duration
	if lease.Spec.RenewTime != nil && lease.Spec.LeaseDurationSeconds != nil {
		renewed, d = &lease.Spec.RenewTime.Time, time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second
	}
	ack := guardv1.ReadAck(lease.Annotations, renewed, d, o.now())
	ex.Guard.Lease, ex.Guard.Live, ex.Guard.Refused = lease.Name, ack.Live, ack.Refused
	if !ack.Expires.IsZero() {
		t := ack.Expires.UTC()
		ex.Guard.Expires = &t
	}
	return ack, nil
}

// enforcing says whether the pod enforces the latest generation of every policy that
// selects it, and why not.
func enforcing(ex *explanation) (bool, string) {
	switch {
	case !ex.Guard.Injected:
		return false, fmt.Sprintf("the pod has no guard (container %s): its traffic is not guarded; label the namespace guardrail.dev/injection=enabled and re-create the pod", guardv1.ContainerName)
	case ex.Pod.Phase != string(corev1.PodRunning):
		return false, "the pod is " + ex.Pod.Phase
	case ex.Guard.Lease == "":
		return false, "the guard has no Lease in the operator's namespace: it has not subscribed yet (or the operator runs elsewhere: --operator-namespace)"
	case !ex.Guard.Live:
		return false, "the guard's Lease expired: it has not polled the operator since"
	case ex.Guard.Refused != "":
		return false, "the guard refused the latest policy: " + ex.Guard.Refused
	}
	var behind []string
	for _, m := range ex.Selecting {
		if m.Acknowledged == nil || *m.Acknowledged != m.Generation {
			behind = append(behind, m.Kind+" "+m.Name)
		}
	}
	if len(behind) > 0 {
		sort.Strings(behind)
		return false, fmt.Sprintf("the guard does not enforce the latest generation of %v yet", behind)
	}
	return true, ""
}

// boundaries composes the compiled selecting policies with the operator's composition
// rule (policy.Compose), the one the guards' engine enforces.
func boundaries(ms []policyMatch) []boundary {
	var gs []*policy.Guardrail
	for _, m := range ms {
		if m.compiled != nil {
			gs = append(gs, m.compiled)
		}
	}
	out := []boundary{}
	for _, e := range policy.Compose(gs) {
		b := boundary{Phase: e.Phase.String(), Action: e.Action.String(), OnFailure: "Open",
			Enforcing: nonNil(e.Enforcing), Reporting: nonNil(e.Reporting)}
		if e.FailClosed {
			b.OnFailure = "Closed"
		}
		if len(e.Categories) > 0 {
			b.Categories = map[string]catEffect{}
			for id, ce := range e.Categories {
				b.Categories[id] = catEffect{Action: ce.Action.String(), Guardrail: ce.Guardrail}
			}
		}
		out = append(out, b)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
