package wire

import (
	"encoding/json"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// geminiPath and geminiInputPath are how FamilyGemini's and FamilyGeminiInput's routes
// are spelled (Family.Path, String).
const (
	geminiPath      = "/v1beta/models/{model}:generateContent"
	geminiInputPath = "/v1beta/models/{model}:{countTokens,embedContent,batchEmbedContents}"
)

// The Gemini methods of a model the guard judges: generateContent and
// streamGenerateContent (FamilyGemini); countTokens, embedContent and
// batchEmbedContents (FamilyGeminiInput).
const (
	GeminiGenerateContent       = "generateContent"
	GeminiStreamGenerateContent = "streamGenerateContent"
	GeminiCountTokens           = "countTokens"
	GeminiEmbedContent          = "embedContent"
	GeminiBatchEmbedContents    = "batchEmbedContents"
)

// geminiVersions are the API versions the Gemini routes are served under.
var geminiVersions = []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"}

// GeminiMethod reads a Gemini route of a model: POST {version}/models/{model}:{method},
// under /v1beta, /v1 or /v1alpha, for one of the methods the guard judges. The model is
// one path segment; anything else is not such a route (ok false).
func GeminiMethod(path string) (model, method string, ok bool) {
	for _, v := range geminiVersions {
		rest, found := strings.CutPrefix(path, v)
		if !found {
			continue
		}
		model, method, found = strings.Cut(rest, ":")
		if !found || model == "" || strings.ContainsAny(model, "/:") {
			return "", "", false
		}
		switch method {
		case GeminiGenerateContent, GeminiStreamGenerateContent, GeminiCountTokens, GeminiEmbedContent, GeminiBatchEmbedContents:
			return model, method, true
		}
		return "", "", false
	}
	return "", "", false
}

// GeminiCall reads a FamilyGemini route: POST {version}/models/{model}:generateContent,
// or :streamGenerateContent (stream set); any other route is not one (ok false).
func GeminiCall(path string) (model string, stream, ok bool) {
	model, method, ok := GeminiMethod(path)
	if !ok || method != GeminiGenerateContent && method != GeminiStreamGenerateContent {
		return "", false, false
	}
	return model, method == GeminiStreamGenerateContent, true
}

// Gemini's JSON parser accepts each member under its lowerCamel name and its proto
// (snake_case) name; the guard reads both and refuses a body naming a field both ways,
// as it refuses two spellings of any field it reads (one would be judged, the other
// answered).
type geminiRequest struct {
	Contents               []geminiContent `json:"contents"`
	SystemInstruction      *geminiContent  `json:"systemInstruction"`
	SystemInstructionSnake *geminiContent  `json:"system_instruction"`
	Tools                  []struct {
		FunctionDeclarations      []geminiFunctionDecl `json:"functionDeclarations"`
		FunctionDeclarationsSnake []geminiFunctionDecl `json:"function_declarations"`
	} `json:"tools"`
	GenerationConfig      *geminiGenerationConfig `json:"generationConfig"`
	GenerationConfigSnake *geminiGenerationConfig `json:"generation_config"`
}

type geminiFunctionDecl struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type geminiGenerationConfig struct {
	CandidateCount         json.RawMessage `json:"candidateCount"`
	CandidateCountSnake    json.RawMessage `json:"candidate_count"`
	ResponseMimeType       string          `json:"responseMimeType"`
	ResponseMimeTypeSnake  string          `json:"response_mime_type"`
	ResponseSchema         json.RawMessage `json:"responseSchema"`
	ResponseSchemaSnake    json.RawMessage `json:"response_schema"`
	ResponseJSONSchema     json.RawMessage `json:"responseJsonSchema"`
	ResponseJSONSchemaSnak json.RawMessage `json:"response_json_schema"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text                  *string             `json:"text"`
	InlineData            *geminiBlob         `json:"inlineData"`
	InlineDataSnake       *geminiBlob         `json:"inline_data"`
	FileData              *geminiFile         `json:"fileData"`
	FileDataSnake         *geminiFile         `json:"file_data"`
	FunctionCall          *geminiFunctionCall `json:"functionCall"`
	FunctionCallSnake     *geminiFunctionCall `json:"function_call"`
	FunctionResponse      *geminiFunctionResp `json:"functionResponse"`
	FunctionResponseSnake *geminiFunctionResp `json:"function_response"`
}

type geminiBlob struct {
	MimeType      string `json:"mimeType"`
	MimeTypeSnake string `json:"mime_type"`
	Data          string `json:"data"`
}

type geminiFile struct {
	MimeType      string `json:"mimeType"`
	MimeTypeSnake string `json:"mime_type"`
	FileURI       string `json:"fileUri"`
	FileURISnake  string `json:"file_uri"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiFunctionResp struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// one returns the member given under either spelling, and false when both are.
func one[T any](camel, snake *T) (*T, bool) {
	if camel != nil && snake != nil {
		return nil, false
	}
	if camel != nil {
		return camel, true
	}
	return snake, true
}

// oneString is one for string members ("" is absent).
func oneString(camel, snake string) (string, bool) {
	if camel != "" && snake != "" {
		return "", false
	}
	return camel + snake, true
}

// oneRaw is one for raw members (null is absent).
func oneRaw(camel, snake json.RawMessage) (json.RawMessage, bool) {
	switch {
	case !jsonx.IsNull(camel) && !jsonx.IsNull(snake):
		return nil, false
	case !jsonx.IsNull(camel):
		return camel, true
	}
	return snake, true
}

func twoSpellings(name string) error {
	return malformed(FamilyGemini, "field %q is named both in lowerCamel and in snake_case: the provider reads one, and the guard would judge the other", name)
}

// parseGemini reads a Gemini generateContent request: systemInstruction becomes a system
// message first, then each of contents. Text parts are judged (thought parts too: a
// client may write them); inline data and file references are media; a functionCall of
// the history is a tool call; a functionResponse is a tool result, judged as the JSON
// text of its response object. The model and whether the call streams are in the path
// (GeminiCall), not the body.
func parseGemini(req *Request, body []byte) error {
	var r geminiRequest
	if err := unmarshal(FamilyGemini, "request", body, &r); err != nil {
		return err
	}
	req.IncludeUsage = true
	gc, ok := one(r.GenerationConfig, r.GenerationConfigSnake)
	if !ok {
		return twoSpellings("generationConfig")
	}
	if gc != nil {
		n, ok := oneRaw(gc.CandidateCount, gc.CandidateCountSnake)
		if !ok {
			return twoSpellings("candidateCount")
		}
		if !jsonx.IsNull(n) {
			c, ok := jsonx.IntOf(n)
			if !ok || c < 1 || c > MaxChoices {
				return malformed(FamilyGemini, "candidateCount is not an integer in [1, %d]", MaxChoices)
			}
			req.N = int(c)
		}
		mime, ok := oneString(gc.ResponseMimeType, gc.ResponseMimeTypeSnake)
		if !ok {
			return twoSpellings("responseMimeType")
		}
		req.Object = strings.HasPrefix(mime, "application/json")
	}
	for _, t := range r.Tools {
		decls := t.FunctionDeclarations
		if len(t.FunctionDeclarationsSnake) > 0 {
			if len(decls) > 0 {
				return twoSpellings("functionDeclarations")
			}
			decls = t.FunctionDeclarationsSnake
		}
		for _, d := range decls {
			req.Tools = append(req.Tools, Tool{Type: "function", Name: d.Name, Description: d.Description})
		}
	}
	return geminiMessages(req, &r, loc{})
}

// geminiMessages appends the messages of a GenerateContentRequest at base in the body:
// its systemInstruction first, then each of its contents.
func geminiMessages(req *Request, r *geminiRequest, base loc) error {
	sys, ok := one(r.SystemInstruction, r.SystemInstructionSnake)
	if !ok {
		return twoSpellings("systemInstruction")
	}
	if sys != nil {
		k := kSystemInstruction
		if r.SystemInstructionSnake != nil {
			k = kSystemInstructionSnake
		}
		at := base.key(k).mark()
		parts, _, err := geminiParts(sys.Parts, at.key(kParts))
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, Message{Role: "system", System: true, Parts: parts, loc: at})
	}
	for i := range r.Contents {
		if err := geminiContentMessage(req, &r.Contents[i], base.key(kContents).idx(i).mark()); err != nil {
			return err
		}
	}
	return nil
}

// geminiContentMessage appends one content, at at in the body, as a message.
func geminiContentMessage(req *Request, c *geminiContent, at loc) error {
	parts, calls, err := geminiParts(c.Parts, at.key(kParts))
	if err != nil {
		return err
	}
	role := c.Role
	if role == "model" {
		role = "assistant"
	}
	req.Messages = append(req.Messages, Message{Role: role, Parts: parts, ToolCalls: calls, loc: at})
	return nil
}

// geminiInputRequest is what the guard reads of a countTokens, embedContent or
// batchEmbedContents request. It reads every member any of the three methods reads,
// whichever the route: what the provider reads of the body is judged, whichever it is.
type geminiInputRequest struct {
	// countTokens: contents, or a whole generateContentRequest.
	Contents                    []geminiContent `json:"contents"`
	GenerateContentRequest      *geminiRequest  `json:"generateContentRequest"`
	GenerateContentRequestSnake *geminiRequest  `json:"generate_content_request"`
	// embedContent: one content, and a title embedded with it.
	Content *geminiContent `json:"content"`
	Title   *string        `json:"title"`
	// batchEmbedContents: embedContent requests.
	Requests []geminiEmbedRequest `json:"requests"`
}

type geminiEmbedRequest struct {
	Content *geminiContent `json:"content"`
	Title   *string        `json:"title"`
}

// parseGeminiInput reads a countTokens, embedContent or batchEmbedContents request. A
// countTokens' contents (or its generateContentRequest, systemInstruction first) are a
// conversation, read as generateContent's are. What an embedding request embeds (content
// and title, or every request's) is one user message, so that a guardrail judging the
// last message judges all of it: the inputs of an embedding are not a history. A body
// holding the members of more than one of these shapes is refused, since the provider
// reads one of them and a guardrail judging the last message might judge another.
func parseGeminiInput(req *Request, body []byte) error {
	var r geminiInputRequest
	if err := unmarshal(FamilyGeminiInput, "request", body, &r); err != nil {
		return err
	}
	gcr, ok := one(r.GenerateContentRequest, r.GenerateContentRequestSnake)
	if !ok {
		return twoSpellings("generateContentRequest")
	}
	shapes := 0
	for _, present := range []bool{r.Contents != nil, gcr != nil, r.Content != nil || r.Title != nil, r.Requests != nil} {
		if present {
			shapes++
		}
	}
	if shapes > 1 {
		return malformed(FamilyGeminiInput, "the request holds the members of more than one method "+
			"(contents, generateContentRequest, content and title, requests): the provider reads one, and the guard would judge another")
	}
	if gcr != nil {
		k := kGenerateContentRequest
		if r.GenerateContentRequestSnake != nil {
			k = kGenerateContentRequestSnake
		}
		return geminiMessages(req, gcr, loc{}.key(k))
	}
	for i := range r.Contents {
		if err := geminiContentMessage(req, &r.Contents[i], loc{}.key(kContents).idx(i).mark()); err != nil {
			return err
		}
	}
	// The message an embedding request makes has no place of its own in the body: its
	// parts have theirs.
	m := Message{Role: "user"}
	embed := func(e *geminiEmbedRequest, base loc) error {
		if e.Title != nil {
			m.Parts = append(m.Parts, textPart(*e.Title).at(base.key(kTitle).mark()))
		}
		if e.Content == nil {
			return nil
		}
		parts, calls, err := geminiParts(e.Content.Parts, base.key(kContent).key(kParts))
		m.Parts, m.ToolCalls = append(m.Parts, parts...), append(m.ToolCalls, calls...)
		return err
	}
	if err := embed(&geminiEmbedRequest{Content: r.Content, Title: r.Title}, loc{}); err != nil {
		return err
	}
	for i := range r.Requests {
		if err := embed(&r.Requests[i], loc{}.key(kRequests).idx(i)); err != nil {
			return err
		}
	}
	if len(m.Parts) > 0 || len(m.ToolCalls) > 0 {
		req.Messages = append(req.Messages, m)
	}
	return nil
}

// geminiParts reads the parts of a content (at: the parts array in the body).
func geminiParts(ps []geminiPart, at loc) ([]Part, []ToolCall, error) {
	var parts []Part
	var calls []ToolCall
	for i := range ps {
		p := &ps[i]
		el := at.idx(i).mark()
		inline, ok1 := one(p.InlineData, p.InlineDataSnake)
		file, ok2 := one(p.FileData, p.FileDataSnake)
		call, ok3 := one(p.FunctionCall, p.FunctionCallSnake)
		resp, ok4 := one(p.FunctionResponse, p.FunctionResponseSnake)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, nil, twoSpellings("part data")
		}
		// A part is one of its data fields; the guard reads every one it is given.
		if p.Text != nil {
			parts = append(parts, textPart(*p.Text).at(el.key(kText)))
		}
		if inline != nil {
			mime, ok := oneString(inline.MimeType, inline.MimeTypeSnake)
			if !ok {
				return nil, nil, twoSpellings("mimeType")
			}
			parts = append(parts, Part{Modality: modalityOfMIME(mime), URL: dataURL(mime, inline.Data), MIMEType: mime}.at(el))
		}
		if file != nil {
			mime, ok := oneString(file.MimeType, file.MimeTypeSnake)
			uri, ok2 := oneString(file.FileURI, file.FileURISnake)
			if !ok || !ok2 {
				return nil, nil, twoSpellings("fileData")
			}
			parts = append(parts, Part{Modality: modalityOfMIME(mime), URL: uri, MIMEType: mime}.at(el))
		}
		if call != nil {
			args := string(call.Args)
			if jsonx.IsNull(call.Args) {
				args = "{}"
			}
			k := kFunctionCallCamel
			if p.FunctionCallSnake != nil {
				k = kFunctionCall
			}
			tc := ToolCall{ID: call.ID, Name: call.Name, Arguments: args}
			if jsonx.IsNull(call.Args) {
				// Nothing in the body to rewrite in place.
				calls = append(calls, tc)
			} else {
				calls = append(calls, tc.at(el.key(k).key(kArgs), true))
			}
		}
		if resp != nil {
			// The response object is judged as its JSON text; a redaction in it cannot be
			// written back into the object (RewriteRequest fails, and the request with it).
			id := resp.ID
			if id == "" {
				id = resp.Name
			}
			pt := textPart(string(resp.Response))
			pt.ToolCallID = id
			parts = append(parts, pt.at(el))
		}
		if p.Text == nil && inline == nil && file == nil && call == nil && resp == nil {
			// executableCode, codeExecutionResult, or a part the guard does not know.
			parts = append(parts, opaquePart(classify.File, "").at(el))
		}
	}
	return parts, calls, nil
}
