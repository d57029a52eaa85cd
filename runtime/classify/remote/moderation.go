package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// Batcher is a classifier that judges several inputs in one call. Results come in the
// order of the inputs; one failure fails the batch.
type Batcher interface {
	classify.Classifier
	ClassifyBatch(ctx context.Context, ins []classify.Input) ([]classify.Result, error)
}

// Moderation is the backend of a moderation classifier: an OpenAI /v1/moderations
// endpoint. It is safe for concurrent use.
type Moderation struct {
	base
	model string
	// names[i] is the endpoint's name of category i (categoryMap resolved).
	names []string
}

var _ Batcher = (*Moderation)(nil)

// NewModeration returns the backend of a moderation classifier (cfg.Kind KindModeration).
func NewModeration(cfg Config, opts ...Option) (*Moderation, error) {
	if cfg.Kind != KindModeration {
		return nil, errors.New("remote: not a moderation classifier")
	}
	if len(cfg.CategoryNames) != len(cfg.Categories) || len(cfg.Categories) == 0 {
		return nil, fmt.Errorf("remote: moderation: %d category names for %d categories",
			len(cfg.CategoryNames), len(cfg.Categories))
	}
	b, err := newBase(&cfg, "moderation", nil, opts)
	if err != nil {
		return nil, err
	}
	return &Moderation{base: b, model: cfg.Model, names: cfg.CategoryNames}, nil
}

// moderationRequest is the body of a /v1/moderations request. Input is a string, an array
// of strings (a batch), or an array of content parts (one input with images).
type moderationRequest struct {
	Model string `json:"model,omitempty"`
	Input any    `json:"input"`
}

// moderationPart is a content part of a multimodal moderation input.
type moderationPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// moderationResponse is the part of a /v1/moderations reply the guard reads; flagged and
// categories are the endpoint's own thresholds and are ignored.
type moderationResponse struct {
	Results []struct {
		CategoryScores map[string]json.RawMessage `json:"category_scores"`
	} `json:"results"`
}

// Classify judges one input with one request whose input is a string, or an array of
// content parts when the input has images.
func (m *Moderation) Classify(ctx context.Context, in classify.Input) (classify.Result, error) {
	return m.call(ctx, in, singleModeration{m})
}

// ClassifyBatch judges several inputs. Inputs answered by the cache are not sent; the
// other text-only inputs go in one request with an array of strings as input; an input
// with images has no place in such an array and gets a request of its own. The
// classifier's timeout covers the whole batch.
func (m *Moderation) ClassifyBatch(ctx context.Context, ins []classify.Input) ([]classify.Result, error) {
	prepared := make([]classify.Input, len(ins))
	for i, in := range ins {
		p, err := m.prepare(in)
		if err != nil {
			return nil, err
		}
		if _, err := moderationInput(p); err != nil {
			return nil, err
		}
		prepared[i] = p
	}
	ctx, cancel := m.bound(ctx)
	defer cancel()
	out := make([]classify.Result, len(ins))
	keys := make([]cacheKey, len(ins))
	var texts []string
	var textIdx, mediaIdx []int
	for i, in := range prepared {
		if m.cache != nil {
			keys[i] = inputKey(in)
			if res, ok := m.cache.get(keys[i]); ok {
				out[i] = res
				continue
			}
		}
		if len(in.Parts) == 0 {
			texts = append(texts, in.Text)
			textIdx = append(textIdx, i)
		} else {
			mediaIdx = append(mediaIdx, i)
		}
	}
	if len(texts) > 0 {
		results, err := m.exchange(ctx, texts, len(texts))
		if err != nil {
			return nil, err
		}
		for j, i := range textIdx {
			out[i] = results[j]
			m.cache.put(keys[i], results[j])
		}
	}
	for _, i := range mediaIdx {
		input, _ := moderationInput(prepared[i])
		results, err := m.exchange(ctx, input, 1)
		if err != nil {
			return nil, err
		}
		out[i] = results[0]
		m.cache.put(keys[i], results[0])
	}
	return out, nil
}

// exchange posts one request and parses its n results.
func (m *Moderation) exchange(ctx context.Context, input any, n int) ([]classify.Result, error) {
	body, err := json.Marshal(moderationRequest{Model: m.model, Input: input})
	if err != nil {
		return nil, classify.Errorf(classify.CodeClassifierFailed, "moderation: cannot encode the request")
	}
	reply, err := m.ep.post(ctx, body)
	if err != nil {
		return nil, err
	}
	return parseModeration(reply, m.names, n)
}

// singleModeration is the codec of Moderation.Classify.
type singleModeration struct{ m *Moderation }

func (s singleModeration) request(in classify.Input) ([]byte, error) {
	input, err := moderationInput(in)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(moderationRequest{Model: s.m.model, Input: input})
	if err != nil {
		return nil, classify.Errorf(classify.CodeClassifierFailed, "moderation: cannot encode the request")
	}
	return body, nil
}

func (s singleModeration) result(body []byte) (classify.Result, error) {
	results, err := parseModeration(body, s.m.names, 1)
	if err != nil {
		return classify.Result{}, err
	}
	return results[0], nil
}

// moderationInput is the input member for one prepared input: its text, or its content
// parts when it has images. The moderation wire format has no audio or file parts.
func moderationInput(in classify.Input) (any, error) {
	if len(in.Parts) == 0 {
		return in.Text, nil
	}
	parts := make([]moderationPart, 0, len(in.Parts)+1)
	if in.Text != "" {
		parts = append(parts, moderationPart{Type: "text", Text: in.Text})
	}
	for _, p := range in.Parts {
		if p.Modality != classify.Image {
			return nil, classify.Errorf(classify.CodeUnsupported, "a moderation endpoint cannot inspect %s", p.Modality)
		}
		parts = append(parts, moderationPart{Type: "image_url", ImageURL: &imageURL{URL: p.URL}})
	}
	return parts, nil
}

// parseModeration parses a moderation reply with n results: Scores[i] of each is
// category_scores[names[i]]. A missing name, a score that is not a number within [0,1], a
// different number of results or malformed JSON is an invalid answer. Category names the
// classifier does not map are ignored.
func parseModeration(body []byte, names []string, n int) ([]classify.Result, error) {
	var resp moderationResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, invalid("moderation reply is not valid JSON of the moderation format")
	}
	if len(resp.Results) != n {
		return nil, invalid("moderation reply has %d results for %d inputs", len(resp.Results), n)
	}
	out := make([]classify.Result, n)
	for i, r := range resp.Results {
		if r.CategoryScores == nil {
			return nil, invalid("moderation result %d has no category_scores", i)
		}
		scores, err := scoresOf(r.CategoryScores, names, nil, false)
		if err != nil {
			return nil, err
		}
		out[i] = classify.Result{Scores: scores}
	}
	return out, nil
}
