package policysource

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	api "github.com/guardrail-dev/guardrail-operator/api/v1alpha1"
	"github.com/guardrail-dev/guardrail-operator/internal/policykube"
)

// streams returns YAML streams at the edges of the splitting rules, and random ones
// assembled from lines that matter to them.
func streams() []string {
	long := func(n int, end string) string { return "k: " + strings.Repeat("x", n-3) + end }
	s := []string{
		"", "\n", "\n\n", "---", "---\n", "--- \n", "---\n---\n", "a: 1", "a: 1\n", "a: 1\n---\nb: 2\n",
		"---\na: 1\n---\nb: 2", "--- # first\na: 1\n--- #second\nb: 2\n", "---x\na: 1\n", "--- x\na: 1\n",
		"a: 1\n----\nb: 2\n", "a: 1\n--- \t \nb: 2\n", "a: 1\r\n---\r\nb: 2\r\n", "a: 1\r", "a: 1\r\r\n",
		"a: 1\n---\n\n---\nb: 2\n", "  ---\na: 1\n", "a: |\n  ---\n  x\n", "a: 1\n...\n---\nb: 2\n",
		"---\n---\n---\n", "a: 1\n---", "a: 1\n--- x", "#---\na: 1\n",
		long(4096, ""), long(4095, ""), long(4097, ""), long(8192, ""), long(4096, "\n"), "a: 1\n" + long(4096, ""),
		long(4095, "\r"), long(4096, "\r"), long(4095, "\r") + "x", long(8191, "\r"), long(8190, "\r\r"),
		"---" + strings.Repeat(" ", 4093), "---" + strings.Repeat(" ", 4093) + "x", "a: 1\n---" + strings.Repeat(" ", 4093),
		long(4096, "\n---\nb: 2"), long(4096, "\r\nb: 2"),
	}
	pool := []string{"a: 1", "b: [x, y]", "---", "--- # c", "---x", "", "  ---", "# c", "kind: K", "\r", "...", "--- "}
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		var b strings.Builder
		for j := range r.IntN(8) {
			if j > 0 {
				b.WriteString([]string{"\n", "\n", "\r\n"}[r.IntN(3)])
			}
			b.WriteString(pool[r.IntN(len(pool))])
		}
		if r.IntN(2) == 0 {
			b.WriteString("\n")
		}
		s = append(s, b.String())
	}
	return s
}

func readAll(next func() ([]byte, error)) (docs []string, err error) {
	for {
		doc, err := next()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, string(doc))
	}
}

// A stream splits into the documents apimachinery's YAML reader returns, with its errors,
// but for one thing: where that reader dropped a last line without "\n" (one bufio read in
// whole 4096-byte pieces), ours keeps it, as the reader does when the line ends in "\n".
func TestDocumentsMatchApimachinery(t *testing.T) {
	theirs := func(s string) string {
		docs, err := readAll(utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s))).Read)
		return fmt.Sprint(docs, err)
	}
	kept := 0
	for _, s := range streams() {
		docs, err := readAll((&documents{rest: []byte(s)}).next)
		ours := fmt.Sprint(docs, err)
		if ours == theirs(s) {
			continue
		}
		if !strings.HasSuffix(s, "\n") && ours == theirs(s+"\n") {
			kept++
			continue
		}
		t.Errorf("%q:\n ours   %s\n theirs %s", s, ours, theirs(s))
	}
	if kept == 0 {
		t.Error("no stream whose last line apimachinery drops: the corpus lost its 4096-byte lines")
	}
}

// referenceDecode is Decode as it was with apimachinery's reader and types.
func referenceDecode(b []byte) (cs []api.Classifier, gs []api.Guardrail, _ error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return cs, gs, nil
		}
		if err != nil {
			return cs, gs, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return cs, gs, fmt.Errorf("document %d: %w", i, err)
		}
		if !strings.HasPrefix(tm.APIVersion, api.GroupVersion.Group+"/") {
			continue
		}
		if tm.APIVersion != api.GroupVersion.String() {
			return cs, gs, fmt.Errorf("document %d: apiVersion %s is not served; use %s", i, tm.APIVersion, api.GroupVersion)
		}
		switch tm.Kind {
		case "Classifier":
			var c api.Classifier
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				return cs, gs, fmt.Errorf("document %d (Classifier): %w", i, err)
			}
			if c.Namespace == "" {
				c.Namespace = DefaultNamespace
			}
			cs = append(cs, c)
		case "Guardrail":
			var g api.Guardrail
			if err := yaml.UnmarshalStrict(doc, &g); err != nil {
				return cs, gs, fmt.Errorf("document %d (Guardrail): %w", i, err)
			}
			if g.Namespace == "" {
				g.Namespace = DefaultNamespace
			}
			gs = append(gs, g)
		default:
			return cs, gs, fmt.Errorf("document %d: unknown kind %s of %s", i, tm.Kind, tm.APIVersion)
		}
	}
}

// A policy file decodes into what the guard reads of the objects of the decoder built on
// apimachinery (kubectl's YAML conversion and the API types), or fails at the same
// document: the same documents, the same strictness on spec. Metadata the guard does not
// read and status are not decoded, so an error there no longer refuses the file.
func TestDecodeMatchesApimachinery(t *testing.T) {
	// A Guardrail as `kubectl get -o yaml` prints it: metadata and status the guard ignores.
	const dumped = `apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata:
  annotations: {a: b}
  creationTimestamp: "2024-05-01T10:00:00Z"
  finalizers: [x]
  generation: 4
  labels: {app: shop}
  managedFields:
  - apiVersion: guardrail.dev/v1alpha1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:mode": {}}}
    manager: kubectl
    operation: Apply
    time: "2024-05-01T10:00:00Z"
  name: dumped
  namespace: shop
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: c, uid: u, controller: true}]
  resourceVersion: "42"
  uid: 0b9f
spec:
  mode: Report
  classifierRef: {name: judge}
  selector: {matchLabels: {tier: web}, matchExpressions: [{key: env, operator: In, values: [prod]}]}
  phases: [Input, Stream]
  threshold: 0.5
  thresholds: [{category: violence, threshold: 0.7}]
  action: Block
  reason: No.
  timeout: 2s
  streaming: {holdBackChars: Unbounded, evaluateEveryChars: 100}
status:
  conditions:
  - {type: Ready, status: "True", reason: Succeeded, message: ok, lastTransitionTime: "2024-05-01T10:00:00Z", observedGeneration: 4}
  enforcement: {selectedPods: 2, acknowledgedPods: 1, summary: 1/2}
  decisions: {blocked: 3, categories: [{name: violence, matches: 3}]}
  lastDecisionTime: "2024-05-01T10:00:00Z"
  observedGeneration: 4
`
	files := []string{
		goodPolicy, dumped, goodPolicy + "---\n" + dumped, "", "---\n", "not: [valid", "[1, 2]", "just a string",
		"apiVersion: guardrail.dev/v1\nkind: Guardrail\n", "apiVersion: guardrail.dev/v1alpha1\nkind: Policy\n",
		"apiVersion: guardrail.dev/v1alpha1\n", "apiVersion: apps/v1\nkind: Deployment\nspec: {x: 1}\n",
		"apiVersion: 5\n", "kind: [a]\napiVersion: guardrail.dev/v1alpha1\n", "--- x\n", goodPolicy + "\n--- x\n",
		strings.Replace(goodPolicy, "reason: Refused.", "reason: Refused.\n  treshold: 0.5", 1),
		strings.Replace(dumped, "  uid: 0b9f", "  uid: 0b9f\n  clusterName: x", 1),
		strings.Replace(dumped, "summary: 1/2", "summary: 1/2, bogus: 1", 1),
		strings.Replace(dumped, `fieldsV1: {"f:spec": {"f:mode": {}}}`, "fieldsV1: null", 1),
		strings.Replace(dumped, "mode: Report", "mode: 5", 1),
		strings.Replace(dumped, "threshold: 0.5", "threshold: high", 1),
		strings.Replace(dumped, "timeout: 2s", "timeout: 2 days", 1),
		strings.Replace(dumped, "timeout: 2s", "timeout: 2", 1),
		strings.Replace(dumped, "holdBackChars: Unbounded", "holdBackChars: 1.5", 1),
		strings.Replace(dumped, "holdBackChars: Unbounded", "holdBackChars: 12", 1),
		strings.Replace(dumped, "holdBackChars: Unbounded", "holdBackChars: null", 1),
		strings.Replace(dumped, `creationTimestamp: "2024-05-01T10:00:00Z"`, "creationTimestamp: yesterday", 1),
		strings.Replace(dumped, `creationTimestamp: "2024-05-01T10:00:00Z"`, "creationTimestamp: null", 1),
		strings.Replace(dumped, "generation: 4", "generation: four", 1),
		strings.Replace(dumped, "name: dumped", "name: [dumped]", 1),
		strings.Replace(dumped, "namespace: shop", "namespace: ''", 1),
		strings.Replace(dumped, "labels: {app: shop}", "labels: {app: 1}", 1),
		strings.Replace(dumped, "kind: Guardrail", "kind: Guardrail\nkind: Guardrail", 1),
		strings.Replace(goodPolicy, "  webhook:", "  Webhook:", 1),
		strings.Replace(goodPolicy, "    url: https://judge.example.com/v1", "    url: https://judge.example.com/v1\n    caBundle: bm90IGEgY2E=", 1),
		strings.Replace(goodPolicy, "    url: https://judge.example.com/v1", "    url: https://judge.example.com/v1\n    caBundle: '%%%'", 1),
		"{\"apiVersion\": \"guardrail.dev/v1alpha1\", \"kind\": \"Classifier\", \"metadata\": {\"name\": \"j\"}, \"spec\": {\"builtin\": {\"packs\": [\"pii\"]}}}",
	}
	// The guard reads only the metadata it uses and skips status: these files, refused
	// when the whole object was decoded strictly, are accepted.
	relaxed := []string{"clusterName: x", "bogus: 1", "creationTimestamp: yesterday"}
	for i, f := range files {
		src, oerr := Decode([]byte(f))
		cs, gs, terr := referenceDecode([]byte(f))
		if oerr != nil || terr != nil {
			docOf := func(err error) string {
				s, _, _ := strings.Cut(fmt.Sprint(err), ":")
				s, _, _ = strings.Cut(s, " (")
				return s
			}
			switch {
			case oerr == nil && slices.ContainsFunc(relaxed, func(r string) bool { return strings.Contains(f, r) }):
			case terr == nil && strings.Contains(f, "mode: 5"):
				// sigs.k8s.io/yaml turned the number into the string "5" for the Go field;
				// the guard, like the apiserver, refuses a number where a string belongs.
			case oerr == nil || terr == nil || docOf(oerr) != docOf(terr):
				t.Errorf("file %d: errors differ:\n ours   %v\n theirs %v", i, oerr, terr)
			}
			if oerr != nil {
				continue
			}
		}
		// What the guard reads of the reference objects: metadata it uses and spec.
		var want []any
		for i := range cs {
			o := policykube.Classifier(&cs[i])
			o.APIVersion, o.Kind, o.Annotations = cs[i].APIVersion, cs[i].Kind, cs[i].Annotations
			want = append(want, o)
		}
		for i := range gs {
			o := policykube.Guardrail(&gs[i])
			o.APIVersion, o.Kind, o.Annotations = gs[i].APIVersion, gs[i].Kind, gs[i].Annotations
			want = append(want, o)
		}
		var got []any
		for _, c := range src.Classifiers {
			got = append(got, c)
		}
		for _, g := range src.Guardrails {
			got = append(got, g)
		}
		ours, _ := json.Marshal(got)
		theirs, _ := json.Marshal(want)
		if terr == nil && !bytes.Equal(ours, theirs) {
			t.Errorf("file %d: objects differ:\n ours   %s\n theirs %s", i, ours, theirs)
		}
	}
}

// A policy file whose last line has no newline keeps it, whatever its length: with
// apimachinery's reader a Guardrail whose 4096-byte reason came last lost the line and was
// refused for having no reason.
func TestALongLastLineWithoutNewlineIsKept(t *testing.T) {
	head := "apiVersion: guardrail.dev/v1alpha1\nkind: Guardrail\nmetadata: {name: g}\nspec:\n  classifierRef: {name: c}\n"
	for _, n := range []int{4095, 4096, 4097, 8192} {
		reason := strings.Repeat("r", n-len("  reason: "))
		src, err := Decode([]byte(head + "  reason: " + reason))
		if err != nil {
			t.Fatalf("%d-byte last line: %v", n, err)
		}
		if len(src.Guardrails) != 1 || src.Guardrails[0].Spec.Reason != reason {
			t.Fatalf("%d-byte last line: the reason was not read whole", n)
		}
	}
}
