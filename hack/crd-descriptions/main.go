// Command crd-descriptions rewraps the descriptions of generated CRDs: controller-gen
// copies Go comments with their hard line breaks, which kubectl explain prints as they
// are, in the middle of its own wrapping ("Redact needs a / classifier that returns
// spans"). Lines of a paragraph are joined with a space; blank lines (paragraphs) and
// lines starting a list item ("- ", "* ") are kept. It also gives an int-or-string field of
// the API's own IntOrString type (api/v1alpha1/spec, which cannot import apimachinery) the
// anyOf [integer, string] that controller-gen writes for intstr.IntOrString and that no
// marker can ask for, so the schema is what it was with apimachinery's type. It rewrites
// the files in place.
//
//	go run ./hack/crd-descriptions config/crd/bases/*.yaml
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := rewrite(path); err != nil {
			fmt.Fprintf(os.Stderr, "crd-descriptions: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	in, err := os.ReadFile(path) //nolint:gosec // a path given on the command line
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(in, &doc); err != nil {
		return err
	}
	walk(doc)
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	// controller-gen starts each file with a document separator.
	out = append([]byte("---\n"), out...)
	if bytes.Equal(in, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o600) //nolint:gosec // a path given on the command line; an existing file keeps its mode
}

func walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		if v["x-kubernetes-int-or-string"] == true && v["anyOf"] == nil && v["type"] == nil {
			v["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
		}
		for k, c := range v {
			if s, ok := c.(string); ok && k == "description" {
				v[k] = Unwrap(s)
				continue
			}
			walk(c)
		}
	case []any:
		for _, c := range v {
			walk(c)
		}
	}
}

// Unwrap joins the lines of each paragraph of s.
func Unwrap(s string) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			prev := lines[i-1]
			switch {
			case l == "" || prev == "" || isItem(l):
				b.WriteByte('\n')
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteString(strings.TrimSpace(l))
	}
	return b.String()
}

func isItem(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ")
}
