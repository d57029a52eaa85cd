package main

import (
	"encoding/json"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/test/fakeprovider"
)

// The workload is ordinary English prose: no personal data, no credentials and no
// injection phrases, so every request is allowed and the guard's cost is the cost of
// inspecting clean traffic — the common case it must make cheap.

// promptProse is the user's question, repeated and cut to the prompt size.
const promptProse = `Our neighbourhood association is planning a small community garden on the empty lot behind the library, and I have been asked to write a short proposal for the next meeting. ` +
	`The lot gets full sun in the morning and partial shade in the late afternoon, the soil is heavy clay, and there is a water tap on the back wall of the library that the city has agreed to let us use. ` +
	`We would like to grow vegetables that children can help with, such as beans, peas, lettuce and squash, along with a few flowers that attract bees and butterflies. ` +
	`Most of the volunteers are retired teachers and young families, so the work has to be light and the schedule flexible. ` +
	`Could you suggest how we should lay out the beds, what we should plant in the first season, how we might improve the soil without spending much money, and how we could organise watering during the summer holidays when many families travel? ` +
	`It would also help to have a few ideas for keeping the garden tidy and welcoming, for sharing the harvest fairly, and for involving the school across the street. ` +
	`Please keep the tone friendly and practical, because the proposal will be read aloud at the meeting and we want people to feel that the project is achievable. `

// answerProse is the model's answer; its words are the deltas of a stream.
const answerProse = `Here is a practical plan for your garden. Start with raised beds built from untreated timber, about a metre wide so that children can reach the middle from either side, ` +
	`and leave paths wide enough for a wheelbarrow. Fill the beds with a mix of the existing soil, compost and leaf mould; clay holds nutrients well once it is opened up with organic matter, ` +
	`and the library may be glad to give you its autumn leaves. In the first season, plant climbing beans and peas along a simple trellis on the north side so they do not shade the other crops, ` +
	`lettuce and radishes in the partly shaded corner, and squash at the sunny end where it can spread. Edge the beds with marigolds, borage and lavender for the bees. ` +
	`For watering, a rota shared among families works best when each household takes one week, and a few soaker hoses connected to the library tap will keep the beds moist with little effort. ` +
	`Mulch generously with straw to hold moisture and keep weeds down. To share the harvest fairly, set up a small table by the gate on weekend mornings, and invite the school to adopt one bed ` +
	`as an outdoor classroom. A noticeboard with the planting plan and the watering rota will make newcomers feel welcome, and a short work morning once a month keeps everything tidy. ` +
	`Above all, start small, celebrate the first harvest together, and let the garden grow with the community.`

// prose returns text made of promptProse repeated and cut at a word boundary to at most
// n bytes.
func prose(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(promptProse)
	}
	out := b.String()[:n]
	if i := strings.LastIndexByte(out, ' '); i > 0 {
		out = out[:i]
	}
	return out
}

// answerDeltas returns the answer as n text deltas, one word each (with its leading space),
// cycling through answerProse.
func answerDeltas(n int) []fakeprovider.Delta {
	words := strings.Fields(answerProse)
	ds := make([]fakeprovider.Delta, n)
	for i := range ds {
		w := words[i%len(words)]
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
			{Role: "user", Content: prose(promptBytes)},
		},
		Stream: stream,
	})
	if err != nil {
		panic(err) // a fixed struct of strings always marshals
	}
	return b
}
