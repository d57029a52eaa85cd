package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The ttfc role measures what a built-in Stream guardrail costs a streamed answer's time to
// first content (issue 14): the provider streams 5-character text events every 20 ms, as a
// model does, and the client's clock runs from sending the request to receiving the first
// text, directly and through the guard, interleaved. A guard that withheld a fixed tail of
// the classifier's longest match (256 characters) delivered a short answer only at its end;
// one that withholds only what is pending delivers the first text one event late.
//
// A second workload plants an email address in the middle of the answer and times the
// text before it: the guard withholds the entity, never the text that precedes it. A third
// sends the address in the prompt, which the guard pseudonymizes, and answers with its
// placeholder in the middle: the guard restores it, and withholds only the placeholder
// while it arrives, never the text before it.

// ttfcConfig is the command line of the ttfc role.
type ttfcConfig struct {
	guardBin string
	streams  int
	gap      time.Duration
	size     int
	slack    time.Duration
}

// ttfcProse is the answer; it holds no entity of the built-in packs.
const ttfcProse = "Sure. Here is a short plan for the garden: raised beds along the fence, beans on a trellis, " +
	"lettuce in the shade, and a rota for watering during the holidays."

// ttfcEntity is planted in the middle of the second workload's answer.
const ttfcEntity = "robin.gardener@example.org"

func runTTFC(ctx context.Context, args []string, out io.Writer) error {
	var c ttfcConfig
	fs := flag.NewFlagSet("guardload ttfc", flag.ContinueOnError)
	fs.StringVar(&c.guardBin, "guard-bin", "", "Guard binary to measure; empty builds ./cmd/guard.")
	fs.IntVar(&c.streams, "streams", 100, "Streams per workload and target.")
	fs.DurationVar(&c.gap, "gap", 20*time.Millisecond, "Delay before each text event of the provider.")
	fs.IntVar(&c.size, "event-chars", 5, "Characters per text event.")
	fs.DurationVar(&c.slack, "slack", 5*time.Millisecond, "Allowed delay over direct beyond one event gap (the target).")
	strict := fs.Bool("strict", false, "Exit with status 1 when a target is missed.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "guardload-ttfc-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() //nolint:gosec // the temporary directory this run created
	bin := c.guardBin
	if bin == "" {
		if bin, err = buildGuard(ctx, dir); err != nil {
			return err
		}
	}

	workloads := []struct {
		name, text, before string
		// prompt is the user message (empty: chatRequest's prose); restored is the text
		// the guard's client must receive when it differs from text.
		prompt, restored string
	}{
		{name: "prose, no entity", text: ttfcProse},
		{name: "an email in the middle", text: ttfcProse[:60] + "write to " + ttfcEntity + " and " + ttfcProse[60:], before: ttfcProse[:60] + "write to ",
			restored: ttfcProse[:60] + "write to [REDACTED:email] and " + ttfcProse[60:]},
		{name: "placeholder restored", text: ttfcProse[:60] + "write to <EMAIL_1> and " + ttfcProse[60:], before: ttfcProse[:60] + "write to ",
			prompt: "Plan the garden and write to " + ttfcEntity + " about it.", restored: ttfcProse[:60] + "write to " + ttfcEntity + " and " + ttfcProse[60:]},
	}
	var script atomic.Pointer[fakeprovider.Script]
	fp := fakeprovider.New(fakeprovider.WithHandler(func(*fakeprovider.Request) fakeprovider.Script { return *script.Load() }))
	defer fp.Close()

	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(ttfcPolicy), 0o600); err != nil {
		return err
	}
	guardAddr, err := freePort(ctx)
	if err != nil {
		return err
	}
	admin, err := freePort(ctx)
	if err != nil {
		return err
	}
	guard, err := startChild("guard", bin, []string{"--listen", guardAddr, "--admin-listen", admin,
		"--openai-upstream", fp.URL, "--anthropic-upstream", fp.URL, "--policy-file", policy, "--log-level", "warn"}, nil)
	if err != nil {
		return err
	}
	defer guard.stop(10 * time.Second)
	if err := guard.waitReady(ctx, "http://"+admin+"/readyz"); err != nil {
		return err
	}

	client := &http.Client{Transport: newTransport(), Timeout: time.Minute}
	defer client.CloseIdleConnections()
	_, _ = fmt.Fprintf(out, "Time to first content: %d streams per workload and target, %d-character events every %s, built-in pii+secrets Redact on Stream and Output (hold-back unset: follows pending matches) and Pseudonymize on Input.\n\n",
		c.streams, c.size, c.gap)
	_, _ = fmt.Fprintf(out, "%-24s %-26s %10s %10s %10s %10s  %s\n", "workload", "measure", "direct p50", "guard p50", "direct p99", "guard p99", "target")
	pass := true
	for _, w := range workloads {
		script.Store(&fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: ttfcDeltas(w.text, c.size, c.gap)}}})
		var direct, guarded [2][]time.Duration // first content; the text before the entity
		for i := 0; i < c.streams; i++ {
			for _, via := range []string{fp.URL, "http://" + guardAddr} {
				first, before, got, err := ttfcStream(ctx, client, via, w.before, w.prompt)
				if err != nil {
					return fmt.Errorf("%s via %s: %w", w.name, via, err)
				}
				want := w.text
				if via != fp.URL && w.restored != "" {
					want = w.restored
				}
				if got != want {
					return fmt.Errorf("%s via %s: the client received %q, want %q", w.name, via, got, want)
				}
				d := &direct
				if via != fp.URL {
					d = &guarded
				}
				d[0] = append(d[0], first)
				d[1] = append(d[1], before)
			}
		}
		measures := []string{"first content"}
		if w.before != "" {
			measures = append(measures, "the text before the entity")
		}
		for k, m := range measures {
			sortDurations(direct[k])
			sortDurations(guarded[k])
			dp50, gp50 := percentile(direct[k], 0.5), percentile(guarded[k], 0.5)
			dp99, gp99 := percentile(direct[k], 0.99), percentile(guarded[k], 0.99)
			limit := c.gap + c.slack
			ok := gp50-dp50 <= limit && gp99-dp99 <= limit
			pass = pass && ok
			verdict := "PASS"
			if !ok {
				verdict = "FAIL"
			}
			_, _ = fmt.Fprintf(out, "%-24s %-26s %10s %10s %10s %10s  %s: guard - direct <= %s\n", w.name, m, ms(dp50), ms(gp50), ms(dp99), ms(gp99), verdict, limit)
		}
	}
	if *strict && !pass {
		return errors.New("targets missed")
	}
	return nil
}

// ttfcPolicy is the guard's policy: the shape of config/samples/pii-secrets-redaction.yaml,
// and of config/samples/pseudonymize-pii.yaml on Input (it changes nothing of a prompt
// without an entity).
const ttfcPolicy = `apiVersion: guardrail.dev/v1alpha1
kind: Classifier
metadata:
  name: detectors
spec:
  builtin:
    packs: [pii, secrets]
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata:
  name: redact
spec:
  mode: Enforce
  classifierRef:
    name: detectors
  phases: [Stream, Output]
  threshold: 1
  action: Redact
  reason: Personal data and credentials are redacted.
---
apiVersion: guardrail.dev/v1alpha1
kind: Guardrail
metadata:
  name: mask
spec:
  mode: Enforce
  classifierRef:
    name: detectors
  phases: [Input]
  threshold: 1
  action: Pseudonymize
  reason: Personal data and credentials are pseudonymized.
`

// ttfcDeltas cuts text into events of size characters, each sent after gap.
func ttfcDeltas(text string, size int, gap time.Duration) []fakeprovider.Delta {
	var ds []fakeprovider.Delta
	rs := []rune(text)
	for i := 0; i < len(rs); i += size {
		d := fakeprovider.Text(string(rs[i:min(i+size, len(rs))]))
		d.Delay = gap
		ds = append(ds, d)
	}
	return ds
}

// ttfcStream streams one chat completion from base and returns the time to the first text,
// the time by which the client held all of before (0 when before is empty), and the text.
// prompt, when set, is the user message.
func ttfcStream(ctx context.Context, client *http.Client, base, before, prompt string) (first, prefix time.Duration, text string, err error) {
	body := chatRequest(256, true)
	if prompt != "" {
		body, _ = json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": true,
			"messages": []map[string]string{{"role": "user", "content": prompt}}})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, "", fmt.Errorf("status %d", resp.StatusCode)
	}
	var got strings.Builder
	err = readChatStream(resp.Body, func(text string) {
		if got.Len() == 0 {
			first = time.Since(start)
		}
		got.WriteString(text)
		if before != "" && prefix == 0 && strings.HasPrefix(got.String(), before) {
			prefix = time.Since(start)
		}
	})
	return first, prefix, got.String(), err
}

// readChatStream reads a chat completion stream and calls onText with each non-empty
// content delta, in order.
func readChatStream(r io.Reader, onText func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		text, err := fakeprovider.ChatChunkText([]byte(data))
		if err != nil {
			return err
		}
		if text != "" {
			onText(text)
		}
	}
	return sc.Err()
}
