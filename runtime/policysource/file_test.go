package policysource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

const goodPolicy = `
apiVersion: v1
kind: Namespace
metadata:
  name: ignored
---
apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata:
  name: judge
  annotations:
    guardrail.dev/credentials-env: JUDGE_TOKEN
spec:
  webhook:
    url: https://judge.example.com/v1
  categories:
    - id: violence
  credentialsSecretRef:
    name: judge
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata:
  name: no-violence
spec:
  mode: Enforce
  classifierRef: {name: judge}
  threshold: 0.8
  action: Block
  reason: Refused.
`

func write(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestFileLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	env := func(name string) string {
		if name == "JUDGE_TOKEN" {
			return "tok"
		}
		return ""
	}

	t.Run("a file of manifests compiles, in the default namespace, with credentials from the environment", func(t *testing.T) {
		write(t, path, goodPolicy)
		snap, err := (&File{Path: path, Getenv: env}).Load()
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Guardrails) != 1 || snap.Guardrails[0].Key != "default/no-violence" {
			t.Fatalf("guardrails = %+v", snap.Guardrails)
		}
		if snap.Classifier("default/judge").Token != "tok" {
			t.Error("token not read from JUDGE_TOKEN")
		}
	})
	t.Run("a credential variable that is unset fails, naming the classifier", func(t *testing.T) {
		write(t, path, goodPolicy)
		_, err := (&File{Path: path, Getenv: func(string) string { return "" }}).Load()
		if err == nil || !strings.Contains(err.Error(), "Classifier default/judge: spec.credentialsSecretRef") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("an unknown field is refused as the apiserver would", func(t *testing.T) {
		write(t, path, strings.Replace(goodPolicy, "reason: Refused.", "reason: Refused.\n  treshold: 0.5", 1))
		_, err := (&File{Path: path, Getenv: env}).Load()
		if err == nil || !strings.Contains(err.Error(), "treshold") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("an invalid policy names the object and field", func(t *testing.T) {
		write(t, path, strings.Replace(goodPolicy, "classifierRef: {name: judge}", "classifierRef: {name: nope}", 1))
		_, err := (&File{Path: path, Getenv: env}).Load()
		if err == nil || !strings.Contains(err.Error(), "Guardrail default/no-violence: spec.classifierRef.name: Not found") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFileRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	write(t, path, strings.Replace(goodPolicy, "    guardrail.dev/credentials-env: JUDGE_TOKEN\n", "", 1))
	f := &File{Path: path, Interval: 10 * time.Millisecond, Getenv: func(string) string { return "" }}

	var mu sync.Mutex
	var applied []*policy.Snapshot
	var reported []error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, func(s *policy.Snapshot) error {
			mu.Lock()
			applied = append(applied, s)
			mu.Unlock()
			return nil
		}, func(err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		})
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
	}

	// The first version needs a token it lacks: reported, nothing applied.
	waitFor("the first error", func() bool { return len(reported) == 1 })
	write(t, path, strings.Replace(goodPolicy, "  credentialsSecretRef:\n    name: judge\n", "", 1))
	waitFor("the fixed file to apply", func() bool { return len(applied) == 1 })
	write(t, path, "not: [valid")
	waitFor("the broken file to be reported", func() bool { return len(reported) == 2 })
	mu.Lock()
	if len(applied) != 1 {
		t.Errorf("a broken file replaced the last good policy: %d applied", len(applied))
	}
	mu.Unlock()
	cancel()
	<-done
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("context not cancelled")
	}
}

func TestFileStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	write(t, path, strings.Replace(goodPolicy, "  credentialsSecretRef:\n    name: judge\n", "", 1))
	f := &File{Path: path, Interval: 10 * time.Millisecond, Getenv: func(string) string { return "token" }}

	var mu sync.Mutex
	var applied []*policy.Snapshot
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx, func(s *policy.Snapshot) error {
		mu.Lock()
		applied = append(applied, s)
		mu.Unlock()
		return nil
	}, func(err error) { t.Errorf("reported: %v", err) })
	// The first load is applied before Start returns.
	mu.Lock()
	n := len(applied)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d snapshots applied when Start returned, want 1", n)
	}
	// Then the file is polled: a change is applied, an unchanged file is not applied again.
	write(t, path, strings.Replace(goodPolicy, "  credentialsSecretRef:\n    name: judge\n", "", 1)+"# changed\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n = len(applied)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed file was not applied: %d snapshots", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 2 {
		t.Errorf("an unchanged file was applied again: %d snapshots", len(applied))
	}
}
