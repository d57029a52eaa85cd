package fakeprovider

import "encoding/json"

// Echo answers every chat request by repeating its last message, streamed in small
// deltas when asked to stream, so that what a policy does to an answer shows.
func Echo(r *Request) Script {
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	text := "Hello from the demo provider."
	if n := len(body.Messages); n > 0 {
		var s string
		if json.Unmarshal(body.Messages[n-1].Content, &s) == nil && s != "" {
			text = "You said: " + s
		}
	}
	return Script{Choices: []Choice{{Deltas: Chunks(text, 4)}}}
}
