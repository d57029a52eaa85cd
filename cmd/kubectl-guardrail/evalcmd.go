package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/guardrail-dev/guardrail-operator/cmd/kubectl-guardrail/internal/policyeval"
	"github.com/guardrail-dev/guardrail-operator/cmd/kubectl-guardrail/internal/policytest"
)

type evalOptions struct {
	files         []string
	recursive     bool
	dataset       string
	guardrail     string
	classifier    string
	phase         string
	threshold     float64
	categories    []string
	deltaSize     int
	minPrecision  []string
	minRecall     []string
	minF1         []string
	misclassified bool
	showText      bool
	output        string
}

func newEvalCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval -f POLICIES --dataset DATASET.jsonl",
		Short: "Measure a Guardrail's or a Classifier's precision and recall on a labelled dataset, offline",
		Long: `Judge each text of a labelled dataset (JSONL) with the guard's own compiler and engine, as
a Guardrail judges it at one phase, and measure precision, recall and F1 per category, their
micro and macro averages and, per line, whether anything was found at all. No cluster and no
network: built-in classifiers run in process; a remote classifier's lines give the verdict
it gave (recorded scores), and eval measures the Guardrail's thresholds and rules on them.

Without --guardrail or --classifier, the policies' only Guardrail is measured, or, when they
hold none, their only Classifier, with every category at --threshold. The Guardrail is
judged in Report mode at the one phase, so that every finding counts however it acts.

--min-precision, --min-recall and --min-f1 set gates: MIN for the micro average, or
SCOPE=MIN where SCOPE is a category, micro, macro, any (per line) or * (each category). The
command exits with status 1 when a gate fails (an undefined figure fails its gate) or a line
could not be evaluated. Texts are never printed unless --show-text is given: a dataset can
hold real secrets. The dataset format is in the plugin's README
(cmd/kubectl-guardrail/README.md).`,
		Example: `  # the pii and secrets sample on its sample dataset
  kubectl guardrail eval -f config/samples/pii-secrets-redaction.yaml \
    --dataset config/samples/tests/pii-secrets-eval.jsonl

  # a gate for CI before switching the Guardrail to Enforce, as JSON
  kubectl guardrail eval -f policies/ --guardrail redact-pii --dataset labelled.jsonl \
    --min-recall 0.95 --min-recall email=0.99 --min-precision '*=0.9' -o json

  # which lines were missed or flagged wrongly (line numbers; --show-text adds the texts)
  kubectl guardrail eval -f classifier.yaml --dataset labelled.jsonl --misclassified`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, streams) },
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "Classifier and Guardrail manifests: files or directories (.yaml, .yml, .json) (required)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read the directories of -f recursively")
	f.StringVar(&o.dataset, "dataset", "", "the labelled dataset, JSONL; - reads standard input (required)")
	f.StringVar(&o.guardrail, "guardrail", "", "the Guardrail to measure (name or namespace/name)")
	f.StringVar(&o.classifier, "classifier", "", "the Classifier to measure alone (name or namespace/name)")
	f.StringVar(&o.phase, "phase", "", "the phase the texts are judged at: Input, ToolResults, Output or Stream (default: the Guardrail's first of Input, Output, ToolResults, Stream; Input for a Classifier)")
	f.Float64Var(&o.threshold, "threshold", policytest.DefaultEvalThreshold, "measuring a Classifier alone: the threshold of every category")
	f.StringSliceVar(&o.categories, "categories", nil, "measuring a Classifier alone: measure these of its categories only")
	f.IntVar(&o.deltaSize, "delta-size", policytest.DefaultDeltaSize, "with --phase Stream: the size of the deltas the texts are streamed in, in characters")
	f.StringSliceVar(&o.minPrecision, "min-precision", nil, "gate: MIN (micro average) or SCOPE=MIN (a category, micro, macro, any or *); repeatable")
	f.StringSliceVar(&o.minRecall, "min-recall", nil, "gate: MIN (micro average) or SCOPE=MIN (a category, micro, macro, any or *); repeatable")
	f.StringSliceVar(&o.minF1, "min-f1", nil, "gate: MIN (micro average) or SCOPE=MIN (a category, micro, macro, any or *); repeatable")
	f.BoolVar(&o.misclassified, "misclassified", false, "list the line numbers (and ids) of the lines with a false positive or a false negative")
	f.BoolVar(&o.showText, "show-text", false, "with the misclassified lines, print their texts (a dataset can hold real secrets)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagRequired("dataset")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("dataset", "jsonl", "json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions([]string{"Input", "ToolResults", "Output", "Stream"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *evalOptions) run(cmd *cobra.Command, streams genericiooptions.IOStreams) error {
	if err := outputFormat(o.output, "table", "json", "yaml"); err != nil {
		return err
	}
	flags := cmd.Flags()
	target := policytest.Target{Guardrail: o.guardrail, Classifier: o.classifier, Phase: o.phase, Categories: o.categories}
	if flags.Changed("threshold") {
		target.Threshold = &o.threshold
	}
	if flags.Changed("delta-size") {
		if o.deltaSize < 1 {
			return fmt.Errorf("--delta-size %d: give a size of 1 character or more", o.deltaSize)
		}
		target.DeltaSize = o.deltaSize
	}
	pols, err := policytest.LoadManifests(o.files, o.recursive, []string{o.dataset})
	if err != nil {
		return err
	}
	judge, err := policytest.NewJudge(pols, target)
	if err != nil {
		return err
	}
	if flags.Changed("delta-size") && judge.Phase.String() != "Stream" {
		return fmt.Errorf("--delta-size: the texts are judged at %s, not streamed (--phase Stream streams them)", judge.Phase)
	}
	var gates []policyeval.Gate
	for _, g := range []struct {
		metric string
		values []string
	}{{policyeval.MetricPrecision, o.minPrecision}, {policyeval.MetricRecall, o.minRecall}, {policyeval.MetricF1, o.minF1}} {
		for _, v := range g.values {
			gate, err := policyeval.ParseGate(g.metric, v, judge.Labels())
			if err != nil {
				return err
			}
			gates = append(gates, gate)
		}
	}

	in := streams.In
	if o.dataset != "-" {
		f, err := os.Open(o.dataset) //nolint:gosec // the user's own dataset
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		in = f
	}
	items, err := policyeval.Load(in, judge)
	if err != nil {
		return fmt.Errorf("dataset %s: %w", o.datasetName(), err)
	}
	report, err := policyeval.Run(cmd.Context(), judge, items, policyeval.Options{
		Dataset: o.datasetName(), Gates: gates, Misclassified: o.misclassified || o.showText, ShowText: o.showText,
	})
	if err != nil {
		return fmt.Errorf("dataset %s: %w", o.datasetName(), err)
	}
	switch o.output {
	case "json", "yaml":
		if err := printStructured(streams.Out, o.output, report); err != nil {
			return err
		}
	default:
		report.WriteText(streams.Out)
	}
	if !report.Passed {
		return errSilent
	}
	return nil
}

func (o *evalOptions) datasetName() string {
	if o.dataset == "-" {
		return "(standard input)"
	}
	return o.dataset
}
