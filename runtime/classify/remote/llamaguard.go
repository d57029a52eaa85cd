package remote

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// llamaGuard is the codec of format llamaGuard: one user message holding Llama Guard's
// task prompt, with the categories numbered S1..Sn in authored order and the content as
// the conversation's user turn, and a "safe" / "unsafe\nS1,S3" reply.
type llamaGuard struct {
	model string
	// head and tail surround the judged text in the prompt.
	head, tail string
	n          int
}

func newLlamaGuard(c *Config) *llamaGuard {
	var b strings.Builder
	if c.Instructions != "" {
		b.WriteString(strings.TrimSpace(c.Instructions))
		b.WriteString("\n\n")
	}
	b.WriteString("Task: Check if there is unsafe content in 'User' messages in conversations according to our safety policy with the below categories.\n\n")
	b.WriteString("<BEGIN UNSAFE CONTENT CATEGORIES>\n")
	for i, cat := range c.Categories {
		fmt.Fprintf(&b, "S%d: %s.", i+1, cat.ID)
		if cat.Description != "" {
			fmt.Fprintf(&b, " %s", cat.Description)
		}
		b.WriteByte('\n')
	}
	b.WriteString("<END UNSAFE CONTENT CATEGORIES>\n\n<BEGIN CONVERSATION>\n\nUser: ")
	head := b.String()
	tail := "\n\n<END CONVERSATION>\n\n" +
		"Provide your safety assessment for ONLY THE LAST User message in the above conversation:\n" +
		" - First line must read 'safe' or 'unsafe'.\n" +
		" - If unsafe, a second line must include a comma-separated list of violated categories."
	return &llamaGuard{model: c.Model, head: head, tail: tail, n: len(c.Categories)}
}

func (g *llamaGuard) request(in classify.Input) ([]byte, error) {
	content, err := userContent(g.head+in.Text+g.tail, in.Parts)
	if err != nil {
		return nil, err
	}
	return encodeChat(chatRequest{Model: g.model, Messages: []chatMessage{{Role: "user", Content: content}}})
}

func (g *llamaGuard) result(body []byte) (classify.Result, error) {
	content, refused, err := parseChat(body)
	if err != nil {
		return classify.Result{}, err
	}
	if refused {
		return refusedResult(g.n, 0), nil
	}
	return parseLlamaGuard(content, g.n)
}

// parseLlamaGuard parses a Llama Guard verdict for n categories. "safe" scores every
// category 0; "unsafe" followed by a line of comma-separated S<k> (1 <= k <= n) scores
// those categories 1. Surrounding white space is ignored; anything else — an unsafe
// verdict without categories, an unknown category, extra lines — is an invalid answer.
func parseLlamaGuard(content string, n int) (classify.Result, error) {
	lines := strings.Split(strings.TrimSpace(content), "\n")
	verdict := strings.TrimSpace(lines[0])
	scores := make([]float64, n)
	switch {
	case verdict == "safe" && len(lines) == 1:
		return classify.Result{Scores: scores}, nil
	case verdict == "unsafe" && len(lines) == 2:
	default:
		return classify.Result{}, invalid("llamaGuard reply is not safe or unsafe with a category line")
	}
	for _, f := range strings.Split(lines[1], ",") {
		num, ok := strings.CutPrefix(strings.TrimSpace(f), "S")
		k, err := strconv.Atoi(num)
		if !ok || err != nil || k < 1 || k > n || num[0] == '+' || num[0] == '-' {
			return classify.Result{}, invalid("llamaGuard reply names a category that is not S1..S%d", n)
		}
		scores[k-1] = 1
	}
	return classify.Result{Scores: scores}, nil
}
