package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// guardload saturate (issue 15): the highest constant rate of non-streamed chat that the
// plain proxy and the guard each sustain on one core (GOMAXPROCS=1 for both) before their
// p99 passes 10 ms or a request fails. The rate climbs in steps; at each step the two are
// measured one after the other, in an order that alternates, each with a short warm-up
// and a slice. One slice's p99 on one core is noisy (a single stall passes 10 ms), so a
// target stops after failing two steps in a row; its figure is the highest step it passed.
// PASS when the guard's highest rate is at least 0.9x the plain proxy's.

const (
	saturationP99    = 10 * time.Millisecond
	saturationFactor = 0.9
)

func runSaturate(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(append([]string{"--rounds", "1"}, args...))
	if err != nil {
		return err
	}
	cfg.guardEnv = append(cfg.guardEnv, "GOMAXPROCS=1")
	cfg.plainEnv = append(cfg.plainEnv, "GOMAXPROCS=1")
	b, err := setUp(ctx, &cfg)
	if b != nil {
		defer b.tearDown()
	}
	if err != nil {
		return err
	}
	check := sameBody(b.wantChat)
	best := map[*target]int{}
	failed := map[*target]string{} // why a target stopped
	misses := map[*target]int{}    // failed steps in a row
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintf(out, "Saturation: non-streamed chat (%d B prompt), GOMAXPROCS=1 for the plain proxy and the guard; a step passes with p99 <= %s and no error\n", cfg.promptBytes, ms(saturationP99))
	_, _ = fmt.Fprintln(tw, "rate (rps)\tplain proxy p99\tguard p99\t")
	const step, top = 250, 8000
	for rate, n := 500, 0; rate <= top && len(failed) < 2; rate, n = rate+step, n+1 {
		cells := map[*target]string{}
		order := []*target{b.plainT, b.guardT}
		if n%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, t := range order {
			if failed[t] != "" {
				cells[t] = "-"
				continue
			}
			if err := sleep(ctx, 300*time.Millisecond); err != nil {
				return err
			}
			if _, err := attack(ctx, t, false, b.chatBody, rate, time.Second, check); err != nil {
				return err
			}
			s, err := attack(ctx, t, false, b.chatBody, rate, cfg.slice, check)
			if err != nil {
				return err
			}
			l := summarize([]sliceResult{s})
			cells[t] = ms(l.p99)
			miss := ""
			switch {
			case l.errors > 0:
				miss = fmt.Sprintf("%d errors at %d rps", l.errors, rate)
				cells[t] += fmt.Sprintf(" (%d errors)", l.errors)
			case l.p99 > saturationP99:
				miss = fmt.Sprintf("p99 %s at %d rps", ms(l.p99), rate)
			}
			if miss == "" {
				best[t], misses[t] = rate, 0
				continue
			}
			if misses[t]++; misses[t] == 2 {
				failed[t] = miss
			}
		}
		_, _ = fmt.Fprintf(tw, "%d\t%s\t%s\t\n", rate, cells[b.plainT], cells[b.guardT])
	}
	_ = tw.Flush()
	plain, guard := best[b.plainT], best[b.guardT]
	verdict := "FAIL"
	if float64(guard) >= saturationFactor*float64(plain) && plain > 0 {
		verdict = "PASS"
	}
	var why []string
	for _, t := range []*target{b.plainT, b.guardT} {
		if failed[t] != "" {
			why = append(why, t.name+": "+failed[t])
		}
	}
	_, _ = fmt.Fprintf(out, "highest rate: plain proxy %d rps, guard %d rps (%.2fx; target >= %.1fx): %s\n  stopped by: %s\n",
		plain, guard, float64(guard)/float64(max(plain, 1)), saturationFactor, verdict, strings.Join(why, "; "))
	if cfg.strict && verdict == "FAIL" {
		return fmt.Errorf("saturation: target missed")
	}
	return nil
}
