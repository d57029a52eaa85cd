package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/guardrail-dev/guardrail-operator/cmd/kubectl-guardrail/internal/policytest"
)

type testOptions struct {
	files     []string
	cases     []string
	recursive bool
	output    string
	verbose   bool
}

func newTestCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &testOptions{}
	cmd := &cobra.Command{
		Use:   "test --cases CASES.yaml [-f POLICIES]...",
		Short: "Run fixture cases through the guard's compiler and engine, offline",
		Long: `Compile Classifier and Guardrail manifests with the guard's own compiler and run the
guard's engine over the requests and answers of a cases file, comparing what happens with
what each case expects. No cluster and no network: built-in classifiers run in process,
remote ones answer with the verdicts the cases file gives.

Each case runs not streamed and, for each delta size it lists, streamed. The command exits
with status 1 when a run fails or cannot run. The format of the cases file is in the
plugin's README (cmd/kubectl-guardrail/README.md).`,
		Example: `  # the samples and their cases
  kubectl guardrail test -f config/samples --cases config/samples/tests/cases.yaml

  # the policies the cases file names (its "policies" field), as JSON for CI
  kubectl guardrail test --cases policy-tests.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, streams) },
	}
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "policy files or directories (.yaml, .yml, .json); default: the cases file's policies")
	f.StringSliceVar(&o.cases, "cases", nil, "cases file(s) (required)")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read the directories of -f recursively")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "list every run, not only those that fail")
	_ = cmd.MarkFlagRequired("cases")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("cases", "yaml", "yml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *testOptions) run(cmd *cobra.Command, streams genericiooptions.IOStreams) error {
	if err := outputFormat(o.output, "text", "json", "yaml"); err != nil {
		return err
	}
	var results []policytest.Result
	for _, path := range o.cases {
		cf, err := policytest.ReadFile(path)
		if err != nil {
			return err
		}
		paths := o.files
		if len(paths) == 0 {
			for _, p := range cf.Policies {
				if !filepath.IsAbs(p) {
					p = filepath.Join(filepath.Dir(path), p) // relative to the cases file
				}
				paths = append(paths, p)
			}
		}
		if len(paths) == 0 {
			return fmt.Errorf("%s names no policies: give them with -f, or list them under policies in the cases file", path)
		}
		pols, err := policytest.LoadPolicies(paths, o.recursive, o.cases)
		if err != nil {
			return err
		}
		runner, err := policytest.NewRunner(pols)
		if err != nil {
			return err
		}
		results = append(results, runner.RunFile(cmd.Context(), cf)...)
	}
	report := policytest.Summarize(results)
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintln(streams.Out, string(b))
	case "yaml":
		b, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, _ = fmt.Fprint(streams.Out, string(b))
	default:
		report.WriteText(streams.Out, o.verbose)
	}
	if !report.OK() {
		return errSilent
	}
	return nil
}
