package main

import (
	"encoding/json"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
	"github.com/guardrail-dev/guardrail-operator/test/load/workload"
)

// The workload's texts are package workload's (test/load/workload).

// answerDeltas returns the answer as n text deltas, one word each (with its leading space).
func answerDeltas(n int) []fakeprovider.Delta {
	ds := make([]fakeprovider.Delta, n)
	for i, w := range workload.AnswerWords(n) {
		if i > 0 {
			w = " " + w
		}
		ds[i] = fakeprovider.Text(w)
	}
	return ds
}

// chatRequest is the body of a chat completion request with a prompt of promptBytes.
func chatRequest(promptBytes int, stream bool) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, err := json.Marshal(struct {
		Model    string    `json:"model"`
		Messages []message `json:"messages"`
		Stream   bool      `json:"stream,omitempty"`
	}{
		Model: "gpt-4o-mini",
		Messages: []message{
			{Role: "system", Content: "You are a helpful assistant for community projects."},
			{Role: "user", Content: workload.Prose(promptBytes)},
		},
		Stream: stream,
	})
	if err != nil {
		panic(err) // a fixed struct of strings always marshals
	}
	return b
}
