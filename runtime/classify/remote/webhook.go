package remote

import (
	"encoding/json"
	"errors"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
)

// The webhook wire format. The package documentation states it for implementers; keep
// the two in step.

type webhookRequest struct {
	Text       string            `json:"text"`
	Parts      []webhookPart     `json:"parts,omitempty"`
	Categories []webhookCategory `json:"categories,omitempty"`
	Questions  []webhookQuestion `json:"questions,omitempty"`
}

type webhookPart struct {
	Type     string `json:"type"`
	URL      string `json:"url"`
	MIMEType string `json:"mimeType,omitempty"`
}

type webhookCategory struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
}

type webhookQuestion struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	Criteria     []webhookCriterion `json:"criteria"`
	Instructions string             `json:"instructions,omitempty"`
}

type webhookCriterion struct {
	Value       string `json:"value"`
	Description string `json:"description"`
}

type webhookResponse struct {
	Scores   map[string]json.RawMessage `json:"scores"`
	Answers  map[string]json.RawMessage `json:"answers"`
	Refusals []string                   `json:"refusals"`
}

// webhook is the codec of a webhook classifier.
type webhook struct {
	ids       []string
	questions []Question
	// cats and qs are the request's categories and questions, built once.
	cats []webhookCategory
	qs   []webhookQuestion
}

func newWebhook(c *Config, opts ...Option) (classify.Classifier, error) {
	if (len(c.Categories) > 0) == (len(c.Questions) > 0) {
		return nil, errors.New("remote: a webhook classifier needs exactly one of categories or questions")
	}
	b, err := newBase(c, "webhook", c.CABundle, opts)
	if err != nil {
		return nil, err
	}
	w := &webhook{ids: categoryIDs(c.Categories), questions: c.Questions}
	for _, cat := range c.Categories {
		w.cats = append(w.cats, webhookCategory(cat))
	}
	for _, q := range c.Questions {
		wq := webhookQuestion{ID: q.ID, Type: string(q.Type), Instructions: q.Instructions}
		for _, cr := range q.Criteria {
			wq.Criteria = append(wq.Criteria, webhookCriterion(cr))
		}
		w.qs = append(w.qs, wq)
	}
	return &classifier{base: b, codec: w}, nil
}

func (w *webhook) request(in classify.Input) ([]byte, error) {
	req := webhookRequest{Text: in.Text, Categories: w.cats, Questions: w.qs}
	for _, p := range in.Parts {
		req.Parts = append(req.Parts, webhookPart{Type: p.Modality.String(), URL: p.URL, MIMEType: p.MIMEType})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, classify.Errorf(classify.CodeClassifierFailed, "webhook: cannot encode the request")
	}
	return body, nil
}

func (w *webhook) result(body []byte) (classify.Result, error) {
	return parseWebhook(body, w.ids, w.questions)
}

// parseWebhook parses a webhook reply for a classifier with categories ids or questions
// qs (exactly one of them is non-empty). See the package documentation for the contract.
func parseWebhook(body []byte, ids []string, qs []Question) (classify.Result, error) {
	var resp webhookResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return classify.Result{}, invalid("webhook reply is not valid JSON of the webhook format")
	}
	if len(qs) > 0 {
		if len(resp.Scores) > 0 || len(resp.Refusals) > 0 {
			return classify.Result{}, invalid("webhook reply to questions has scores or refusals")
		}
		if resp.Answers == nil {
			return classify.Result{}, invalid("webhook reply has no answers")
		}
		answers, err := answersOf(resp.Answers, qs)
		if err != nil {
			return classify.Result{}, err
		}
		return classify.Result{Answers: answers}, nil
	}
	if len(resp.Answers) > 0 {
		return classify.Result{}, invalid("webhook reply to categories has answers")
	}
	if resp.Scores == nil {
		return classify.Result{}, invalid("webhook reply has no scores")
	}
	var refused []bool
	if len(resp.Refusals) > 0 {
		refused = make([]bool, len(ids))
		for _, r := range resp.Refusals {
			i := indexOf(ids, r)
			if i < 0 {
				return classify.Result{}, invalid("webhook reply refuses a category that is not one of the classifier's")
			}
			refused[i] = true
		}
	}
	scores, err := scoresOf(resp.Scores, ids, refused, true)
	if err != nil {
		return classify.Result{}, err
	}
	return classify.Result{Scores: scores, Refusals: refused}, nil
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}
