package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// startupRuns is how many times the guard is started to time it.
const startupRuns = 5

// targetStartup: the injected guard is a native sidecar whose startup probe gates its
// pod's app, so its time to ready is added to every pod start (issue 15).
const targetStartup = 50 * time.Millisecond

// measureStartup starts the guard startupRuns times with the run's policy file (the three
// built-in packs) and times each from exec to the first 200 from /readyz, polled every
// millisecond; it returns the median and the slowest.
func (b *bench) measureStartup(ctx context.Context) (median, slowest time.Duration, err error) {
	client := &http.Client{Timeout: time.Second}
	var runs []time.Duration
	for range startupRuns {
		addr, err := freePort(ctx)
		if err != nil {
			return 0, 0, err
		}
		admin, err := freePort(ctx)
		if err != nil {
			return 0, 0, err
		}
		start := time.Now()
		g, err := startChild("guard (startup)", b.guardBin, []string{"--listen", addr, "--admin-listen", admin,
			"--openai-upstream", "http://127.0.0.1:1", "--policy-file", b.policy, "--log-level", "warn"}, b.cfg.guardEnv)
		if err != nil {
			return 0, 0, err
		}
		ready, err := firstReady(ctx, client, "http://"+admin+"/readyz", g)
		g.stop(5 * time.Second)
		if err != nil {
			return 0, 0, err
		}
		runs = append(runs, ready.Sub(start))
	}
	slices.Sort(runs)
	return runs[len(runs)/2], runs[len(runs)-1], nil
}

// firstReady polls url every millisecond until it answers 200, and returns when.
func firstReady(ctx context.Context, client *http.Client, url string, g *child) (time.Time, error) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return time.Time{}, err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		select {
		case <-g.done:
			return time.Time{}, g.exited()
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("the guard was not ready within 10 s")
}
