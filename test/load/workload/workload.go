// Package workload holds the texts of the guard's load tests (test/load/cmd/guardload) so
// that the benchmarks of the packages under them measure the same traffic: ordinary English
// prose with no personal data, no credentials and no injection phrases, so that every request
// is allowed and the guard's cost is the cost of inspecting clean traffic — the common case
// it must make cheap.
package workload

import "strings"

// PromptProse is the user's question, repeated and cut to the prompt size.
const PromptProse = `Our neighbourhood association is planning a small community garden on the empty lot behind the library, and I have been asked to write a short proposal for the next meeting. ` +
	`The lot gets full sun in the morning and partial shade in the late afternoon, the soil is heavy clay, and there is a water tap on the back wall of the library that the city has agreed to let us use. ` +
	`We would like to grow vegetables that children can help with, such as beans, peas, lettuce and squash, along with a few flowers that attract bees and butterflies. ` +
	`Most of the volunteers are retired teachers and young families, so the work has to be light and the schedule flexible. ` +
	`Could you suggest how we should lay out the beds, what we should plant in the first season, how we might improve the soil without spending much money, and how we could organise watering during the summer holidays when many families travel? ` +
	`It would also help to have a few ideas for keeping the garden tidy and welcoming, for sharing the harvest fairly, and for involving the school across the street. ` +
	`Please keep the tone friendly and practical, because the proposal will be read aloud at the meeting and we want people to feel that the project is achievable. `

// AnswerProse is the model's answer; its words are the deltas of a stream.
const AnswerProse = `Here is a practical plan for your garden. Start with raised beds built from untreated timber, about a metre wide so that children can reach the middle from either side, ` +
	`and leave paths wide enough for a wheelbarrow. Fill the beds with a mix of the existing soil, compost and leaf mould; clay holds nutrients well once it is opened up with organic matter, ` +
	`and the library may be glad to give you its autumn leaves. In the first season, plant climbing beans and peas along a simple trellis on the north side so they do not shade the other crops, ` +
	`lettuce and radishes in the partly shaded corner, and squash at the sunny end where it can spread. Edge the beds with marigolds, borage and lavender for the bees. ` +
	`For watering, a rota shared among families works best when each household takes one week, and a few soaker hoses connected to the library tap will keep the beds moist with little effort. ` +
	`Mulch generously with straw to hold moisture and keep weeds down. To share the harvest fairly, set up a small table by the gate on weekend mornings, and invite the school to adopt one bed ` +
	`as an outdoor classroom. A noticeboard with the planting plan and the watering rota will make newcomers feel welcome, and a short work morning once a month keeps everything tidy. ` +
	`Above all, start small, celebrate the first harvest together, and let the garden grow with the community.`

// Prose returns text made of PromptProse repeated and cut at a word boundary to at most
// n bytes.
func Prose(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(PromptProse)
	}
	out := b.String()[:n]
	if i := strings.LastIndexByte(out, ' '); i > 0 {
		out = out[:i]
	}
	return out
}

// AnswerWords returns the first n words of the answer, cycling through AnswerProse: the text
// deltas of a streamed answer of n events, and, joined by spaces, the answer of a
// non-streamed call.
func AnswerWords(n int) []string {
	words := strings.Fields(AnswerProse)
	out := make([]string, n)
	for i := range out {
		out[i] = words[i%len(words)]
	}
	return out
}
