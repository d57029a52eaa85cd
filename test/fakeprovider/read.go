package fakeprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Record answers one request (a POST of body to path) with script on a provider of its own
// and returns the whole response body: an answer for a test's own upstream to replay, with
// delays or a connection held open that the provider itself does not script.
func Record(ctx context.Context, script Script, path, body string) ([]byte, error) {
	p := New()
	defer p.Close()
	p.Enqueue(script)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("the fake provider answered %d: %.200s", resp.StatusCode, b)
	}
	return b, err
}

// ChatStreamText joins the content deltas of a chat completion stream, as a client reading
// it would, and reports whether the stream ended with its terminator ([DONE]). An event
// that is not a chat chunk is an error.
func ChatStreamText(sse []byte) (text string, terminated bool, err error) {
	var b strings.Builder
	for line := range bytes.Lines(sse) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			terminated = true
			continue
		}
		t, err := ChatChunkText(data)
		if err != nil {
			return b.String(), terminated, err
		}
		b.WriteString(t)
	}
	return b.String(), terminated, nil
}

// ChatChunkText returns the content of one chat completion chunk (the data of one event),
// its choices' deltas joined.
func ChatChunkText(data []byte) (string, error) {
	var chunk struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &chunk); err != nil {
		return "", fmt.Errorf("a stream event that is not a chat chunk (%w): %.80s", err, data)
	}
	var b strings.Builder
	for _, c := range chunk.Choices {
		b.WriteString(c.Delta.Content)
	}
	return b.String(), nil
}
