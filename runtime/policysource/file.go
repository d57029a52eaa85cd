// Package policysource gives the guard its policy. File reads a YAML stream of Classifier
// and Guardrail manifests — the very files users `kubectl apply` — compiles them with
// policy.Compile, and watches the file, re-applying it when its content changes; an invalid
// file keeps the last good policy. The control-plane subscription to the operator
// (runtime/controlplane.Client) is the other Source.
package policysource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/guardrail-dev/guardrail-operator/api/v1alpha1/spec"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// CredentialsEnvAnnotation is the annotation, on a Classifier of a policy file, that names
// the environment variable holding the classifier's credential when the guard runs
// standalone (there is no Secret to read outside Kubernetes).
const CredentialsEnvAnnotation = "guardrail.dev/credentials-env" //nolint:gosec // a variable name, not a credential

// DefaultNamespace is the namespace of objects in a policy file that name none, as
// kubectl would apply them.
const DefaultNamespace = "default"

// maxFileSize bounds a policy file.
const maxFileSize = 8 << 20

// Source delivers compiled policy snapshots to the guard.
type Source interface {
	// Run calls apply with each new good snapshot and report with each error (the last
	// good snapshot stays in force), until ctx ends. An error from apply refuses the
	// snapshot.
	Run(ctx context.Context, apply func(*policy.Snapshot) error, report func(error))
}

// File is a Source reading a policy file.
type File struct {
	Path string
	// Interval between checks of the file; 0 means 1s. Polling, rather than inotify,
	// also follows the symlink swaps of a mounted ConfigMap.
	Interval time.Duration
	// Getenv reads credentials; nil means os.Getenv.
	Getenv func(string) string
}

// Load reads and compiles the file once.
func (f *File) Load() (*policy.Snapshot, error) {
	b, err := f.read()
	if err != nil {
		return nil, err
	}
	return f.compile(b)
}

func (f *File) read() ([]byte, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = fh.Close() }()
	b, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("policy file %s is larger than %d bytes", f.Path, maxFileSize)
	}
	return b, nil
}

// Run implements Source: it loads the file, then polls it and re-applies it whenever its
// content changes.
func (f *File) Run(ctx context.Context, apply func(*policy.Snapshot) error, report func(error)) {
	w := &fileWatch{f: f, apply: apply, report: report}
	w.check()
	w.poll(ctx)
}

// Start is Run with the first load in the caller's goroutine: it returns once the file
// has been read and applied (or reported) the first time, and polls it in a goroutine of
// its own until ctx ends. The guard loads its policy file so, on the goroutine that has
// run the packages' initialisers: decoding and compiling the policy needs a deep stack,
// which that goroutine already has, where a new goroutine would grow one (the runtime
// reads the function tables of every frame each time a stack grows, pages of the binary
// the guard would otherwise not touch).
func (f *File) Start(ctx context.Context, apply func(*policy.Snapshot) error, report func(error)) {
	w := &fileWatch{f: f, apply: apply, report: report}
	w.check()
	go w.poll(ctx)
}

// fileWatch applies a File whenever its content changes.
type fileWatch struct {
	f      *File
	apply  func(*policy.Snapshot) error
	report func(error)
	last   [sha256.Size]byte
}

// check reads the file and, when its content changed since the last check, compiles and
// applies it.
func (w *fileWatch) check() {
	b, err := w.f.read()
	if err != nil {
		w.report(err)
		return
	}
	sum := sha256.Sum256(b)
	if sum == w.last {
		return
	}
	w.last = sum
	snap, err := w.f.compile(b)
	if err != nil {
		w.report(err)
		return
	}
	if err := w.apply(snap); err != nil {
		w.report(fmt.Errorf("policy file %s: %w", w.f.Path, err))
	}
}

// poll checks the file every Interval until ctx ends.
func (w *fileWatch) poll(ctx context.Context) {
	interval := w.f.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}

// compile decodes every document and compiles the policy.
func (f *File) compile(b []byte) (*policy.Snapshot, error) {
	src, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", f.Path, err)
	}
	getenv := f.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	src.Tokens = map[string]string{}
	for _, c := range src.Classifiers {
		if name := c.Annotations[CredentialsEnvAnnotation]; name != "" {
			src.Tokens[policy.Key(c.Namespace, c.Name)] = getenv(name)
		}
	}
	snap, err := policy.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", f.Path, err)
	}
	return snap, nil
}

// Decode reads a YAML (or JSON) stream of manifests into Classifiers and Guardrails.
// Documents of other kinds (a Namespace, a Secret) are skipped. Our kinds decode as
// policy.Object does: an unknown field of a spec is an error, as the apiserver would refuse
// it; metadata the guard does not read and status are ignored, so a file of objects
// `kubectl get -o yaml` printed is accepted.
func Decode(b []byte) (policy.Sources, error) {
	var src policy.Sources
	reader := &documents{rest: b}
	for i := 0; ; i++ {
		doc, err := reader.next()
		if errors.Is(err, io.EOF) {
			return src, nil
		}
		if err != nil {
			return src, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yamlToJSON(doc)
		if err != nil {
			return src, fmt.Errorf("document %d: %w", i, err)
		}
		// Any document may be in the stream: its apiVersion and kind are read leniently,
		// and one that is not a string is not ours.
		var head map[string]any
		if err := json.Unmarshal(js, &head); err != nil {
			return src, fmt.Errorf("document %d: %w", i, err)
		}
		tm := struct{ APIVersion, Kind string }{}
		tm.APIVersion, _ = head["apiVersion"].(string)
		tm.Kind, _ = head["kind"].(string)
		if !strings.HasPrefix(tm.APIVersion, spec.Group+"/") {
			continue
		}
		if tm.APIVersion != spec.APIVersion {
			return src, fmt.Errorf("document %d: apiVersion %s is not served; use %s", i, tm.APIVersion, spec.APIVersion)
		}
		switch tm.Kind {
		case "Classifier":
			var c policy.ClassifierObject
			if err := json.Unmarshal(js, &c); err != nil {
				return src, fmt.Errorf("document %d (Classifier): %w", i, err)
			}
			if c.Namespace == "" {
				c.Namespace = DefaultNamespace
			}
			src.Classifiers = append(src.Classifiers, c)
		case "Guardrail":
			var g policy.GuardrailObject
			if err := json.Unmarshal(js, &g); err != nil {
				return src, fmt.Errorf("document %d (Guardrail): %w", i, err)
			}
			if g.Namespace == "" {
				g.Namespace = DefaultNamespace
			}
			src.Guardrails = append(src.Guardrails, g)
		default:
			return src, fmt.Errorf("document %d: unknown kind %s of %s", i, tm.Kind, tm.APIVersion)
		}
	}
}
