package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
)

// addKubeFlags adds kubectl's connection flags (--kubeconfig, --context, -n, ...) and
// completes -n with the cluster's namespaces.
func addKubeFlags(cmd *cobra.Command, kube *genericclioptions.ConfigFlags) {
	kube.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, err := newClients(kube)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := c.kube.CoreV1().Namespaces().List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, len(list.Items))
		for i := range list.Items {
			names[i] = list.Items[i].Name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

func addOutputFlag(cmd *cobra.Command, v *string, def string) {
	cmd.Flags().StringVarP(v, "output", "o", def, "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

// printStructured writes v as JSON or YAML.
func printStructured(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// asSelector converts an API label selector; nil stays nil.
func asSelector(s *api.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	return metav1.LabelSelectorAsSelector(api.LabelSelectorToMetaV1(s))
}

// selectsNamespace reports whether a ClusterGuardrail's namespaceSelector selects a
// namespace with these labels: unset or empty selects every namespace.
func selectsNamespace(s *api.LabelSelector, nsLabels labels.Set) bool {
	ok, _ := selectorMatch(s, nsLabels)
	return ok
}

// selectorMatch reports whether s matches set and says why: the requirements that held,
// or the first that did not. An unset or empty selector matches everything.
func selectorMatch(s *api.LabelSelector, set labels.Set) (bool, string) {
	sel, err := asSelector(s)
	switch {
	case err != nil:
		return false, "invalid selector: " + err.Error()
	case sel == nil || sel.Empty():
		return true, "empty"
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if !r.Matches(set) {
			return false, r.String() + " does not hold"
		}
	}
	return true, sel.String()
}

// labelList spells a label set, sorted: "app=chat, tier=web", or "none".
func labelList(l map[string]string) string {
	if len(l) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
