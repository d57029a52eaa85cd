package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The guard's load test's workload (test/load/cmd/guardload, workload.go): a 2 KB prompt of
// English prose and the answer of 200 words, which the guard classifies with the three packs
// on every non-streamed chat call. The texts are copied so that this package's benchmarks
// measure what the load measures.

const loadPromptProse = `Our neighbourhood association is planning a small community garden on the empty lot behind the library, and I have been asked to write a short proposal for the next meeting. ` +
	`The lot gets full sun in the morning and partial shade in the late afternoon, the soil is heavy clay, and there is a water tap on the back wall of the library that the city has agreed to let us use. ` +
	`We would like to grow vegetables that children can help with, such as beans, peas, lettuce and squash, along with a few flowers that attract bees and butterflies. ` +
	`Most of the volunteers are retired teachers and young families, so the work has to be light and the schedule flexible. ` +
	`Could you suggest how we should lay out the beds, what we should plant in the first season, how we might improve the soil without spending much money, and how we could organise watering during the summer holidays when many families travel? ` +
	`It would also help to have a few ideas for keeping the garden tidy and welcoming, for sharing the harvest fairly, and for involving the school across the street. ` +
	`Please keep the tone friendly and practical, because the proposal will be read aloud at the meeting and we want people to feel that the project is achievable. `

const loadAnswerProse = `Here is a practical plan for your garden. Start with raised beds built from untreated timber, about a metre wide so that children can reach the middle from either side, ` +
	`and leave paths wide enough for a wheelbarrow. Fill the beds with a mix of the existing soil, compost and leaf mould; clay holds nutrients well once it is opened up with organic matter, ` +
	`and the library may be glad to give you its autumn leaves. In the first season, plant climbing beans and peas along a simple trellis on the north side so they do not shade the other crops, ` +
	`lettuce and radishes in the partly shaded corner, and squash at the sunny end where it can spread. Edge the beds with marigolds, borage and lavender for the bees. ` +
	`For watering, a rota shared among families works best when each household takes one week, and a few soaker hoses connected to the library tap will keep the beds moist with little effort. ` +
	`Mulch generously with straw to hold moisture and keep weeds down. To share the harvest fairly, set up a small table by the gate on weekend mornings, and invite the school to adopt one bed ` +
	`as an outdoor classroom. A noticeboard with the planting plan and the watering rota will make newcomers feel welcome, and a short work morning once a month keeps everything tidy. ` +
	`Above all, start small, celebrate the first harvest together, and let the garden grow with the community.`

// loadTexts returns the load's prompt (loadPromptProse repeated and cut at a word boundary to
// at most 2048 bytes) and answer (the first 200 words of loadAnswerProse, cycled).
func loadTexts() (prompt, answer string) {
	var b strings.Builder
	for b.Len() < 2048 {
		b.WriteString(loadPromptProse)
	}
	prompt = b.String()[:2048]
	prompt = prompt[:strings.LastIndexByte(prompt, ' ')]
	words := strings.Fields(loadAnswerProse)
	b.Reset()
	for i := range 200 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	return prompt, b.String()
}

// BenchmarkClassifyLoadChat classifies the load's prompt and answer with the three packs: one
// operation is what the guard's packs do for one non-streamed chat call.
func BenchmarkClassifyLoadChat(b *testing.B) {
	c, err := New(Config{Detectors: defaultPacks()})
	if err != nil {
		b.Fatal(err)
	}
	prompt, answer := loadTexts()
	ctx := context.Background()
	b.SetBytes(int64(len(prompt) + len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range [2]string{prompt, answer} {
			if _, err := c.Classify(ctx, classify.Input{Text: text}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
