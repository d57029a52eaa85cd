package main

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newStatusCommand(streams genericiooptions.IOStreams, kube *genericclioptions.ConfigFlags) *cobra.Command {
	return &cobra.Command{Use: "status"}
}
