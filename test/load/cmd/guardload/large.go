package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// guardload large (issue 15, "large inputs"): a 1 MiB prompt and a 1 MiB streamed answer
// through the guard, the built-in packs on Input, Stream and Output. Requests are sent one
// at a time to the provider directly, through a plain reverse proxy and through the guard;
// the table gives each one's median latency, what the proxies add to it, and the guard's
// peak RSS. Every answer is checked: the prompt's answer is the provider's, the stream
// arrives whole.

const largeSize = 1 << 20

func runLarge(ctx context.Context, args []string, out io.Writer) error {
	guardBin, runs := "", 20
	if len(args) >= 2 && args[0] == "--guard-bin" {
		guardBin = args[1]
	}
	dir, err := os.MkdirTemp("", "guardload-large-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if guardBin == "" {
		if guardBin, err = buildGuard(ctx, dir); err != nil {
			return err
		}
	}
	stream := newLongProvider(32)
	stream.stream(largeSize)
	answer := []byte(`{"id":"chatcmpl-large","object":"chat.completion","created":1700000000,"model":"large","choices":[{"index":0,"message":{"role":"assistant","content":"Thank you for the long letter."},"finish_reason":"stop"}]}`)
	provider := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.Contains(string(body[:min(len(body), 200)]), `"stream":true`) {
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			stream.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	providerURL, stopProvider, err := serveLoopback(ctx, provider)
	if err != nil {
		return err
	}
	defer stopProvider()
	u, _ := url.Parse(providerURL)
	plainURL, stopPlain, err := serveLoopback(ctx, plainProxy(u))
	if err != nil {
		return err
	}
	defer stopPlain()

	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(linearPolicyYAML("[pii, secrets, prompt-injection]", "[Input, Stream, Output]")), 0o600); err != nil {
		return err
	}
	addr, err := freePort(ctx)
	if err != nil {
		return err
	}
	admin, err := freePort(ctx)
	if err != nil {
		return err
	}
	g, err := startChild("guard", guardBin, []string{"--listen", addr, "--admin-listen", admin,
		"--openai-upstream", providerURL, "--policy-file", policy, "--log-level", "warn"}, nil)
	if err != nil {
		return err
	}
	defer g.stop(10 * time.Second)
	if err := g.waitReady(ctx, "http://"+admin+"/readyz"); err != nil {
		return err
	}
	idle, err := memStatus(g.pid())
	if err != nil {
		return err
	}

	client := &http.Client{Transport: newTransport()}
	prompt := chatRequest(largeSize, false)
	targets := []struct{ name, url string }{{"direct", providerURL}, {"plain proxy", plainURL}, {"guard", "http://" + addr}}
	results := map[string][2]time.Duration{}
	for _, t := range targets {
		var chat, streamed []time.Duration
		for range runs {
			start := time.Now()
			got, err := post(ctx, client, t.url, prompt)
			if err != nil {
				return fmt.Errorf("%s, 1 MiB prompt: %w", t.name, err)
			}
			if string(got) != string(answer) {
				return fmt.Errorf("%s, 1 MiB prompt: the answer changed: %.200s", t.name, got)
			}
			chat = append(chat, time.Since(start))
			start = time.Now()
			if err := streamOnce(ctx, client, t.url, stream.text(largeSize)); err != nil {
				return fmt.Errorf("%s, 1 MiB stream: %w", t.name, err)
			}
			streamed = append(streamed, time.Since(start))
		}
		slices.Sort(chat)
		slices.Sort(streamed)
		results[t.name] = [2]time.Duration{chat[runs/2], streamed[runs/2]}
	}
	peak, err := memStatus(g.pid())
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "Large inputs: %d sequential requests each, a %d-byte prompt (non-streamed) and a %d-byte answer streamed in 32-character deltas; the guard judges Input, Stream and Output with the three built-in packs\n", runs, len(prompt), largeSize)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	_, _ = fmt.Fprintln(tw, "\t1 MiB prompt p50\tadded\t1 MiB stream p50\tadded\t")
	d := results["direct"]
	for _, t := range targets {
		r := results[t.name]
		added := [2]string{"-", "-"}
		if t.name != "direct" {
			added = [2]string{signed(r[0] - d[0]), signed(r[1] - d[1])}
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", t.name, ms(r[0]), added[0], ms(r[1]), added[1])
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintf(out, "guard RSS: %s idle, peak %s (VmHWM)\n", mib(idle.rss), mib(peak.hwm))
	return nil
}

// serveLoopback serves h on a loopback port of its own and returns its base URL.
func serveLoopback(ctx context.Context, h http.Handler) (string, func(), error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
