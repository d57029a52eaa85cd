package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
)

// statusRow is one Guardrail or ClusterGuardrail as `status` shows it.
type statusRow struct {
	Kind string `json:"kind"`
	// Namespace of a Guardrail; for a ClusterGuardrail, the namespace its figures are
	// for, or "*" when they are summed over every namespace it selects.
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Mode       string `json:"mode"`
	Generation int64  `json:"generation"`
	// Ready is the Ready condition's status (True, False, Unknown).
	Ready       string `json:"ready"`
	ReadyReason string `json:"readyReason,omitempty"`
	// SelectedPods, AcknowledgedPods and PodsWithoutGuard are status.enforcement's.
	SelectedPods     int32 `json:"selectedPods"`
	AcknowledgedPods int32 `json:"acknowledgedPods"`
	PodsWithoutGuard int32 `json:"podsWithoutGuard,omitempty"`
	// Decisions are status.decisions' totals.
	Blocked    int64 `json:"blocked"`
	Redacted   int64 `json:"redacted"`
	WouldBlock int64 `json:"wouldBlock"`
	Failed     int64 `json:"failed"`
	// Problems say what needs attention; empty when it enforces as it should.
	Problems []string `json:"problems,omitempty"`
}

type statusOptions struct {
	kube          *genericclioptions.ConfigFlags
	allNamespaces bool
	output        string
}

func newStatusCommand(streams genericiooptions.IOStreams, kube *genericclioptions.ConfigFlags) *cobra.Command {
	o := &statusOptions{kube: kube}
	cmd := &cobra.Command{
		Use:   "status [-n NAMESPACE | -A]",
		Short: "What is enforced, reported and failing, per Guardrail and ClusterGuardrail",
		Long: `One table of the Guardrails of a namespace (every namespace with -A) and of the
ClusterGuardrails that apply there: mode, Ready, pods enforcing the latest generation out of
those selected, and the blocked, redacted, would-block and failed totals the guards
reported. PROBLEMS says what needs attention.`,
		Example: `  kubectl guardrail status -A
  kubectl guardrail status -n demo -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(o.output, "table", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClients(o.kube)
			if err != nil {
				return err
			}
			rows, err := o.rows(cmd.Context(), c)
			if err != nil {
				return err
			}
			if o.output != "table" {
				return printStructured(streams.Out, o.output, map[string]any{"items": rows})
			}
			writeStatusTable(streams.Out, rows)
			return nil
		},
	}
	addKubeFlags(cmd, kube)
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "every namespace")
	addOutputFlag(cmd, &o.output, "table")
	return cmd
}

func (o *statusOptions) rows(ctx context.Context, c *clients) ([]statusRow, error) {
	ns := c.namespace
	if o.allNamespaces {
		ns = ""
	}
	gs, err := c.listGuardrails(ctx, ns)
	if err != nil {
		return nil, err
	}
	cgs, err := c.listClusterGuardrails(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]statusRow, 0, len(gs)+len(cgs))
	for i := range gs {
		g := &gs[i]
		rows = append(rows, newStatusRow("Guardrail", g.Namespace, g.Name, &g.ObjectMeta, g.Spec.Mode, &g.Status))
	}
	var nsLabels labels.Set
	if ns != "" && len(cgs) > 0 {
		n, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return nil, forbiddenHint(err, "get namespace "+ns)
		}
		nsLabels = n.Labels
	}
	for i := range cgs {
		cg := &cgs[i]
		if ns != "" && !selectsNamespace(cg.Spec.NamespaceSelector, nsLabels) {
			continue
		}
		r := newStatusRow("ClusterGuardrail", "*", cg.Name, &cg.ObjectMeta, cg.Spec.Mode, &cg.Status.GuardrailStatus)
		if ns != "" {
			r.Namespace = ns
			narrowToNamespace(&r, &cg.Status, ns)
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Kind != b.Kind {
			return a.Kind == "ClusterGuardrail"
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return rows, nil
}

// narrowToNamespace replaces a ClusterGuardrail's totals by its figures in ns when its
// status lists them; otherwise the totals stay and the row says so.
func narrowToNamespace(r *statusRow, st *api.ClusterGuardrailStatus, ns string) {
	for _, b := range st.Namespaces {
		if b.Namespace != ns {
			continue
		}
		f := b.NamespaceFigures
		r.SelectedPods, r.AcknowledgedPods, r.PodsWithoutGuard = f.SelectedPods, f.AcknowledgedPods, f.PodsWithoutGuard
		r.Blocked, r.Redacted, r.WouldBlock, r.Failed = f.Blocked, f.Redacted, f.WouldBlock, f.Failed
		r.Problems = problems(r)
		return
	}
	r.Namespace = "*"
}

func newStatusRow(kind, ns, name string, meta *metav1.ObjectMeta, mode spec.Mode, st *api.GuardrailStatus) statusRow {
	r := statusRow{Kind: kind, Namespace: ns, Name: name, Generation: meta.Generation, Mode: string(mode), Ready: "Unknown"}
	if cond := apimeta.FindStatusCondition(st.Conditions, api.ConditionReady); cond != nil {
		r.Ready = string(cond.Status)
		if cond.Status != metav1.ConditionTrue {
			r.ReadyReason = cond.Reason
		}
	}
	if e := st.Enforcement; e != nil {
		r.SelectedPods, r.AcknowledgedPods, r.PodsWithoutGuard = e.SelectedPods, e.AcknowledgedPods, e.PodsWithoutGuard
	}
	if d := st.Decisions; d != nil {
		r.Blocked, r.Redacted, r.WouldBlock, r.Failed = d.Blocked, d.Redacted, d.WouldBlock, d.Failed
	}
	r.Problems = problems(&r)
	return r
}

// problems says what of a row needs attention.
func problems(r *statusRow) []string {
	var out []string
	if r.Ready != "True" {
		p := "not Ready"
		if r.ReadyReason != "" {
			p += " (" + r.ReadyReason + ")"
		}
		out = append(out, p)
	}
	if n := r.SelectedPods - r.AcknowledgedPods; n > 0 {
		out = append(out, fmt.Sprintf("%d pods not enforcing generation %d", n, r.Generation))
	}
	if r.PodsWithoutGuard > 0 {
		out = append(out, fmt.Sprintf("%d pods without a guard", r.PodsWithoutGuard))
	}
	if r.Failed > 0 {
		out = append(out, fmt.Sprintf("%d evaluations failed", r.Failed))
	}
	return out
}

func writeStatusTable(w io.Writer, rows []statusRow) {
	if len(rows) == 0 {
		_, _ = fmt.Fprintln(w, "No Guardrails or ClusterGuardrails found.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	_, _ = fmt.Fprintln(tw, "NAMESPACE\tKIND\tNAME\tMODE\tREADY\tENFORCED\tBLOCKED\tREDACTED\tWOULD-BLOCK\tFAILED\tPROBLEMS")
	enforce, report, attention := 0, 0, 0
	for _, r := range rows {
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Kind, r.Name, r.Mode, r.Ready,
			r.AcknowledgedPods, r.SelectedPods, count(r.Blocked), count(r.Redacted), count(r.WouldBlock), count(r.Failed),
			strings.Join(r.Problems, "; "))
		if r.Mode == "Report" {
			report++
		} else {
			enforce++
		}
		if len(r.Problems) > 0 {
			attention++
		}
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintf(w, "\n%d enforcing, %d reporting, %d need attention\n", enforce, report, attention)
}

// count prints a counter, 0 as "0" (a table of numbers reads better without blanks).
func count(n int64) string { return strconv.FormatInt(n, 10) }
