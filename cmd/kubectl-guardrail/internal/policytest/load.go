package policytest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policysource"

	// Rules are type-checked with cel-go here; the guard cannot.
	_ "github.com/guardrail-dev/guardrail-operator/internal/rulecheck"
)

// stubCredential stands in for the Secrets of remote classifiers: the compiler requires
// their credentials resolved, and a stubbed classifier never sends one anywhere.
const stubCredential = "kubectl-guardrail-test" //nolint:gosec // a placeholder, not a credential

// Policies is a compiled policy and the files it was read from.
type Policies struct {
	Snapshot *policy.Snapshot
	// Files read, in order.
	Files []string
}

// manifestFile reports whether a directory entry is read as manifests, as kubectl apply
// -f reads a directory.
func manifestFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// policyFiles expands paths (files, or directories of .yaml, .yml and .json files,
// descended into when recursive) into files, leaving out skip (the cases files).
func policyFiles(paths []string, recursive bool, skip []string) ([]string, error) {
	skipAbs := map[string]bool{}
	for _, s := range skip {
		if a, err := filepath.Abs(s); err == nil {
			skipAbs[a] = true
		}
	}
	var files []string
	add := func(p string) {
		if a, err := filepath.Abs(p); err == nil && skipAbs[a] {
			return
		}
		if !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("policies: %w", err)
		}
		if !fi.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if manifestFile(d.Name()) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("policies: %w", err)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	if len(files) == 0 {
		return nil, errors.New("policies: no .yaml, .yml or .json file found in " + strings.Join(paths, ", "))
	}
	return files, nil
}

// LoadPolicies reads the Classifier and Guardrail manifests of paths as the guard reads a
// policy file (policysource.Decode: other kinds are skipped, unknown fields are errors),
// and compiles them with the guard's compiler. Errors name the file and the field. The
// manifests must hold a Guardrail.
func LoadPolicies(paths []string, recursive bool, skip []string) (*Policies, error) {
	p, err := LoadManifests(paths, recursive, skip)
	if err != nil {
		return nil, err
	}
	if len(p.Snapshot.Guardrails) == 0 {
		return nil, fmt.Errorf("no Guardrail in %s", strings.Join(p.Files, ", "))
	}
	return p, nil
}

// LoadManifests is LoadPolicies for manifests that may hold Classifiers only (what
// `kubectl guardrail eval` measures).
func LoadManifests(paths []string, recursive bool, skip []string) (*Policies, error) {
	files, err := policyFiles(paths, recursive, skip)
	if err != nil {
		return nil, err
	}
	var src policy.Sources
	from := map[string]string{} // "Kind namespace/name" → file
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // the user's own policy files
		if err != nil {
			return nil, err
		}
		s, err := policysource.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w%s", f, err, decodeHint(err))
		}
		for _, c := range s.Classifiers {
			from["Classifier "+policy.Key(c.Namespace, c.Name)] = f
		}
		for _, g := range s.Guardrails {
			from["Guardrail "+policy.Key(g.Namespace, g.Name)] = f
		}
		src.Classifiers = append(src.Classifiers, s.Classifiers...)
		src.Guardrails = append(src.Guardrails, s.Guardrails...)
	}
	src.Tokens = map[string]string{}
	for _, c := range src.Classifiers {
		if c.Spec.CredentialsSecretRef != nil {
			src.Tokens[policy.Key(c.Namespace, c.Name)] = stubCredential
		}
	}
	snap, err := policy.Compile(src)
	if err != nil {
		var errs policy.Errors
		if !errors.As(err, &errs) {
			return nil, err
		}
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = fmt.Sprintf("%s: %s", from[e.Kind+" "+e.Key], e.Error())
		}
		return nil, fmt.Errorf("the policies do not compile:\n  %s", strings.Join(msgs, "\n  "))
	}
	return &Policies{Snapshot: snap, Files: files}, nil
}

// decodeHint says what to do about a kind the guard's decoder does not read.
func decodeHint(err error) string {
	if strings.Contains(err.Error(), "unknown kind Cluster") {
		return " (this kubectl-guardrail reads Classifier and Guardrail manifests only: test the cluster kinds' specs as namespaced ones)"
	}
	return ""
}
