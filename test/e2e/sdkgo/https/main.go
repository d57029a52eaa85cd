// Command https is a Go app calling a guard that serves HTTPS (a SharedGuard with
// spec.tls) with the official openai-go and anthropic-sdk-go clients, configured as
// docs/shared-guard.md tells a Go app to: the guard's https base URL, and the CA that issued
// its certificate in SSL_CERT_FILE, set by the caller. Nothing here trusts a CA itself: the
// clients use Go's default transport, whose roots are the system's (on Linux, the file
// SSL_CERT_FILE names). One JSON line per step on stdout; test/e2e/sdkgo_tls_test.go judges
// them.
//
//	SSL_CERT_FILE=ca.pem https GUARD_URL API_KEY MAX_RETRIES
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
)

type step struct {
	Step   string `json:"step"`
	Text   string `json:"text,omitempty"`
	Error  string `json:"error,omitempty"`
	Status int    `json:"status,omitempty"`
}

func say(s step) {
	if err := json.NewEncoder(os.Stdout).Encode(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func failed(name string, err error) {
	s := step{Step: name, Error: err.Error()}
	var oe *openai.Error
	var ae *anthropic.Error
	switch {
	case errors.As(err, &oe):
		s.Status = oe.StatusCode
	case errors.As(err, &ae):
		s.Status = ae.StatusCode
	}
	say(s)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: https GUARD_URL API_KEY MAX_RETRIES")
		os.Exit(2)
	}
	base, key := os.Args[1], os.Args[2]
	retries, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	oc := openai.NewClient(oaoption.WithBaseURL(base+"/v1/"), oaoption.WithAPIKey(key), oaoption.WithMaxRetries(retries))
	ac := anthropic.NewClient(antoption.WithBaseURL(base), antoption.WithAPIKey(key), antoption.WithMaxRetries(retries))
	const prompt = "How do I reach Ana?"
	chat := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}

	if c, err := oc.Chat.Completions.New(ctx, chat); err != nil {
		failed("chat", err)
	} else {
		say(step{Step: "chat", Text: c.Choices[0].Message.Content})
	}

	stream := oc.Chat.Completions.NewStreaming(ctx, chat)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		failed("chat stream", err)
	} else if len(acc.Choices) == 0 {
		failed("chat stream", errors.New("no choice"))
	} else {
		say(step{Step: "chat stream", Text: acc.Choices[0].Message.Content})
	}
	_ = stream.Close()

	ms := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}})
	var msg anthropic.Message
	for ms.Next() {
		if err := msg.Accumulate(ms.Current()); err != nil {
			failed("messages stream", err)
			return
		}
	}
	switch {
	case ms.Err() != nil:
		failed("messages stream", ms.Err())
	case len(msg.Content) == 0:
		failed("messages stream", errors.New("no content"))
	default:
		say(step{Step: "messages stream", Text: msg.Content[0].Text})
	}
}
