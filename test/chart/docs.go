// Package chart tests the Helm chart (chart_test.go); this file lets other suites run the
// commands the chart's README documents, so that what is tested is what users are told.
package chart

import (
	"fmt"
	"os"
	"strings"
)

// ShellBlocks returns the ```sh blocks of the section titled heading ("## Upgrade") of
// the markdown file at path, in order.
func ShellBlocks(path, heading string) ([]string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the repository's README
	if err != nil {
		return nil, err
	}
	var blocks []string
	in, block := false, []string(nil)
	inBlock := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == heading
		case in && !inBlock && line == "```sh":
			inBlock, block = true, nil
		case in && inBlock && line == "```":
			inBlock = false
			blocks = append(blocks, strings.Join(block, "\n")+"\n")
		case in && inBlock:
			block = append(block, line)
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%s: no sh block under %q", path, heading)
	}
	return blocks, nil
}
