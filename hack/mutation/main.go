// Command mutation runs gremlins (mutation testing) over the packages whose decisions the
// product's correctness rests on — the engine, the policy compiler and the built-in
// detectors — and reports, per package, the efficacy: killed / (killed + lived), the
// mutants listed as equivalent in hack/mutation/equivalent.txt left out, each with its
// reason. It exits 1 when a package is under the threshold (90%), or when the equivalents
// file names a mutant that no longer lives (so the list stays true). The tests are built with
// the `mutation` tag, under which a slow property test may try fewer cases (see
// runtime/classify/builtin/scale_test.go): that can only let a mutant live, never kill one.
//
//	go run ./hack/mutation --gremlins bin/gremlins-v0.6.0 [--threshold 90] [package ...]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// report is the part of gremlins' --output JSON the efficacy needs.
type report struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err) //nolint:forbidigo // a command's own output
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gremlins := flag.String("gremlins", "gremlins", "The gremlins binary.")
	threshold := flag.Float64("threshold", 90, "Minimum efficacy per package, in percent.")
	equivalentFile := flag.String("equivalent", "hack/mutation/equivalent.txt", "Mutants judged equivalent: `path:line:column TYPE  reason`, one per line.")
	workers := flag.Int("workers", 2, "gremlins workers.")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./runtime/engine", "./runtime/policy", "./runtime/classify/builtin"}
	}
	equivalent, err := readEquivalent(*equivalentFile)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mutation-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()

	used := map[string]bool{}
	var failed []string
	var lines []string
	for i, pkg := range pkgs {
		out := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		cmd := exec.CommandContext(ctx, *gremlins, "unleash", "--tags", "mutation", "--workers", fmt.Sprint(*workers), "--timeout-coefficient", "3", "--output", out, pkg) //nolint:gosec // the developer's own tool and packages
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("gremlins on %s: %w", pkg, err)
		}
		b, err := os.ReadFile(out) //nolint:gosec // our own temporary file
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("gremlins output for %s: %w", pkg, err)
		}
		var killed, lived, skipped int
		var alive []string
		for _, f := range r.Files {
			path := filepath.ToSlash(filepath.Join(strings.TrimPrefix(pkg, "./"), f.FileName))
			for _, m := range f.Mutations {
				key := fmt.Sprintf("%s:%d:%d %s", path, m.Line, m.Column, m.Type)
				switch m.Status {
				case "KILLED":
					killed++
				case "LIVED":
					if _, ok := equivalent[key]; ok {
						used[key] = true
						skipped++
						continue
					}
					lived++
					alive = append(alive, key)
				}
			}
		}
		eff := 100.0
		if killed+lived > 0 {
			eff = 100 * float64(killed) / float64(killed+lived)
		}
		verdict := "PASS"
		if eff < *threshold {
			verdict = "FAIL"
			failed = append(failed, pkg)
		}
		lines = append(lines, fmt.Sprintf("%-30s killed %4d  lived %4d  equivalent %3d  efficacy %6.2f%%  %s", pkg, killed, lived, skipped, eff, verdict))
		sort.Strings(alive)
		for _, a := range alive {
			lines = append(lines, "    lived: "+a)
		}
	}
	var stale []string
	for key := range equivalent {
		if !used[key] && coversAny(key, pkgs) {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	fmt.Println(strings.Join(lines, "\n")) //nolint:forbidigo // a command's own output
	if len(stale) > 0 {
		return fmt.Errorf("%s lists mutants that no longer live (remove them): %s", *equivalentFile, strings.Join(stale, "; "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("efficacy under %.0f%% in %s", *threshold, strings.Join(failed, ", "))
	}
	return nil
}

// readEquivalent reads `path:line:column TYPE  reason` lines; # starts a comment. Every
// entry needs a reason.
func readEquivalent(name string) (map[string]string, error) {
	f, err := os.Open(name) //nolint:gosec // the repository's own file
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want `path:line:column TYPE  reason`", name, n)
		}
		out[fields[0]+" "+fields[1]] = strings.Join(fields[2:], " ")
	}
	return out, sc.Err()
}

func coversAny(key string, pkgs []string) bool {
	for _, p := range pkgs {
		if strings.HasPrefix(key, strings.TrimPrefix(p, "./")+"/") {
			rest := strings.TrimPrefix(key, strings.TrimPrefix(p, "./")+"/")
			if !strings.Contains(strings.Fields(rest)[0], "/") {
				return true
			}
		}
	}
	return false
}
