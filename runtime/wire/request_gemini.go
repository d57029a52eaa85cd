package wire

import (
	"encoding/json"
	"strings"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// geminiPath is how FamilyGemini's route is spelled (Family.Path, String).
const geminiPath = "/v1beta/models/{model}:generateContent"

// Gemini methods of a model.
const (
	geminiGenerate = ":generateContent"
	geminiStream   = ":streamGenerateContent"
)

// geminiVersions are the API versions the Gemini routes are served under.
var geminiVersions = []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"}

// GeminiCall reads a Gemini route: POST {version}/models/{model}:generateContent, or
// :streamGenerateContent (stream set), under /v1beta, /v1 or /v1alpha. The model is one
// path segment; anything else is not a Gemini call (ok false).
func GeminiCall(path string) (model string, stream, ok bool) {
	for _, v := range geminiVersions {
		rest, found := strings.CutPrefix(path, v)
		if !found {
			continue
		}
		switch {
		case strings.HasSuffix(rest, geminiStream):
			model, stream = strings.TrimSuffix(rest, geminiStream), true
		case strings.HasSuffix(rest, geminiGenerate):
			model = strings.TrimSuffix(rest, geminiGenerate)
		default:
			return "", false, false
		}
		if model == "" || strings.ContainsAny(model, "/:") {
			return "", false, false
		}
		return model, stream, true
	}
	return "", false, false
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
	sys, ok := one(r.SystemInstruction, r.SystemInstructionSnake)
	if !ok {
		return twoSpellings("systemInstruction")
	}
	if sys != nil {
		k := kSystemInstruction
		if r.SystemInstructionSnake != nil {
			k = kSystemInstructionSnake
		}
		at := loc{}.key(k).mark()
		parts, _, err := geminiParts(sys.Parts, at.key(kParts))
		if err != nil {
			return err
		}
		req.Messages = append(req.Messages, Message{Role: "system", System: true, Parts: parts, loc: at})
	}
	for i := range r.Contents {
		c := &r.Contents[i]
		at := loc{}.key(kContents).idx(i).mark()
		parts, calls, err := geminiParts(c.Parts, at.key(kParts))
		if err != nil {
			return err
		}
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		req.Messages = append(req.Messages, Message{Role: role, Parts: parts, ToolCalls: calls, loc: at})
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
