package e2e

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/test/entities"
	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// TestConcurrentStreamsEachGetTheirOwnAnswer: apps with many users stream many answers
// through one guard at once, and the guard reuses its stream buffers from one answer to the
// next. Eight openai-go clients each stream six answers concurrently through the guard
// binary with the shipped redaction sample; every answer is its own prose with its own
// credential, in deltas of 1–300 bytes, and one in three carries a 40 KiB delta (a buffer
// the guard does not keep). Each client must read exactly its own answer with its own
// credential replaced: no byte of another conversation, no credential, nothing lost.
func TestConcurrentStreamsEachGetTheirOwnAnswer(t *testing.T) {
	sample := samplePolicy(t, "pii-secrets-redaction.yaml")
	words := strings.Fields("the tomatoes on the south wall ripen a fortnight before the ones by the shed " +
		"because the brick keeps the warmth of the afternoon well into the evening")
	// conversation n's answer, the credential in it, and what the client must read.
	conversation := func(n int) (deltas []string, secret, want string) {
		rng := rand.New(rand.NewPCG(uint64(n), 99))
		prose := func(size int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "[conversation %d] ", n)
			for b.Len() < size {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			return b.String()
		}
		head, tail := prose(200+rng.IntN(2000)), prose(200+rng.IntN(2000))
		if n%3 == 0 {
			tail += strings.Repeat(fmt.Sprintf("[conversation %d] ", n), 40<<10/16)
		}
		secret = entities.Token(rng, entities.Upper+entities.Lower+entities.Digits, 24+rng.IntN(17))
		text := head + "\nDEPLOY_TOKEN=" + secret + "\n" + tail
		want = head + "\nDEPLOY_TOKEN=[REDACTED:generic-secret]\n" + tail
		for rest := text; len(rest) > 0; {
			size := 1 + rng.IntN(300)
			if n%3 == 0 && len(deltas) == 5 {
				size = 40 << 10
			}
			d := entities.Split(rest, size)[0]
			deltas, rest = append(deltas, d), rest[len(d):]
		}
		return deltas, secret, want
	}
	p := fakeprovider.New(fakeprovider.WithHandler(func(r *fakeprovider.Request) fakeprovider.Script {
		_, after, _ := strings.Cut(string(r.Body), "conversation ")
		n, _ := strconv.Atoi(strings.TrimRightFunc(after[:min(len(after), 4)], func(c rune) bool { return c < '0' || c > '9' }))
		deltas, _, _ := conversation(n)
		return fakeprovider.Script{Choices: []fakeprovider.Choice{{Deltas: fakeprovider.Texts(deltas...)}}}
	}))
	t.Cleanup(p.Close)
	g := startGuard(t, sample, upstream(p.URL))
	oc := openaiClient(g)

	const clients, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				n := c*each + i
				_, secret, want := conversation(n)
				acc, _, err := chatStream(testContext(t), oc, chatParams(fmt.Sprintf("conversation %d, please", n)))
				if err != nil {
					errs <- fmt.Errorf("conversation %d: %w", n, err)
					continue
				}
				if len(acc.Choices) == 0 {
					errs <- fmt.Errorf("conversation %d: no answer", n)
					continue
				}
				got := acc.Choices[0].Message.Content
				switch {
				case strings.Contains(got, secret[:8]):
					errs <- fmt.Errorf("conversation %d: its credential reached the client", n)
				case got != want:
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					errs <- fmt.Errorf("conversation %d: %d bytes, want %d; first difference at %d: %q",
						n, len(got), len(want), i, got[i:min(len(got), i+60)])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
