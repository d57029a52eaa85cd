// Command kubectl-guardrail is the kubectl plugin of guardrail-operator: `kubectl guardrail
// test` runs the guard's compiler and engine over fixture cases, offline, and `eval`
// measures a Guardrail's precision and recall on a labelled dataset with them; `status` and
// `explain` read what the operator and the guards report in a cluster. It links client-go;
// the guard does not (runtime/linkcheck_test.go).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// errSilent ends the command with exit status 1 after it has said why (failed tests).
var errSilent = errors.New("")

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := newRootCommand(streams).Execute(); err != nil {
		if !errors.Is(err, errSilent) {
			_, _ = fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-guardrail",
		Short: "Test, explain and watch guardrail-operator policies",
		Long: `kubectl guardrail tests Guardrail and Classifier manifests offline with the guard's own
compiler and engine, and shows what the guards of a cluster enforce.

  kubectl guardrail test -f policies/ --cases cases.yaml   offline: fixture cases, expected outcomes
  kubectl guardrail eval -f policies/ --dataset d.jsonl    offline: precision and recall on labelled texts
  kubectl guardrail status -A                              what is enforced, reported and failing
  kubectl guardrail explain pod NAME -n NS                 which Guardrails apply to a pod, and why`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl guardrail"},
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetIn(streams.In)
	kube := genericclioptions.NewConfigFlags(true)
	root.AddCommand(newTestCommand(streams), newEvalCommand(streams), newStatusCommand(streams, kube), newExplainCommand(streams, kube))
	return root
}

// outputFormat checks the value of -o.
func outputFormat(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("--output %q is not supported: use one of %v", v, allowed)
}
