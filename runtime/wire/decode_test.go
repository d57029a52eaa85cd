package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// decodeSeeds are bodies of every family, and the corners of JSON decoding: names that
// differ in case or folding, escaped names, null, wrong types, numbers that do not fit,
// escapes and invalid UTF-8 in strings.
var decodeSeeds = []string{
	`{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],"n":2,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"What is in this image?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}},{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}}]}]}`,
	`{"model":"gpt-4o","response_format":{"type":"json_schema"},"tools":[{"type":"function","function":{"name":"get_weather","description":"W"}}],"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"Sunny"}]}`,
	`{"model":"gpt-4.1","instructions":"Talk like a pirate.","input":"Hi","stream":true,"text":{"format":{"type":"json_object"}}}`,
	`{"model":"gpt-4.1","tools":[{"type":"function","name":"f","description":"W","parameters":{}}],"input":[{"role":"user","content":[{"type":"input_text","text":"Hi"},{"type":"input_image","image_url":"https://x/y.png"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`,
	`{"model":"text-embedding-3-small","input":["one","two",[1,2,3]]}`,
	`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"Be kind."}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"}},{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}]}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","reasoning_content":"think","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`,
	`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"},{"type":"refusal","refusal":"no"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"usage":{"input_tokens":3,"output_tokens":4}}`,
	`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{"x":"y"}}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`,
	`{"MODEL":"m","Messages":[{"ROLE":"user","Content":"Hi"}],"STREAM":true,"N":3}`,
	`{"meſſages":[{"role":"user","content":"Hi"}]}`,
	`{"\u006dessages":[{"role":"user","\u0063ontent":"Hi \ud83d\ude00 \ud800 \u00e9"}]}`,
	`{"messages":[{"role":"user","content":"a` + "\xff\xfe" + `b"}],"model":"` + "\xc3" + `"}`,
	`{"messages":null,"model":null,"n":null,"stream":null,"stream_options":null}`,
	`{"messages":[{"role":"user","content":"x"}],"n":1.0}`,
	`{"messages":[{"role":"user","content":"x"}],"n":99999999999999999999}`,
	`{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`,
	`{"messages":{"role":"user"}}`,
	`{"messages":[{"role":5}]}`,
	`{"choices":[{"index":-1,"message":{"content":"x"}}]}`,
	`{"choices":[{"index":1e2,"message":{"content":"x"}}]}`,
	`{"usage":{"prompt_tokens":"5"}}`,
	`{"messages":[{"role":"user","content":"first"}],"messages":[{"role":"assistant"}]}`,
	`{"messages":[{"content":"a"},{"content":"b"},{"content":"c"}],"messages":[{"role":"user"}],"messages":[{},{"role":"user"},{}]}`,
	`{"model":"a","n":2,"stream_options":{"include_usage":true},"model":null,"n":null,"stream_options":{}}`,
	`{"choices":[{"index":0,"message":{"content":"x","tool_calls":[{"id":"a"},{"id":"b"}]}}],"choices":[{"message":{"tool_calls":[{}]}}]}`,
	`[1,2]`, `"x"`, `null`, `{}`, ` {"messages" : [ ] } `,
	// Texts long enough to be the body's own bytes (jsonx.SharedMin), plain, escaped and
	// not UTF-8.
	`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("a long plain prompt ", 5) + `"},{"role":"user","content":"` +
		strings.Repeat(`line\n`, 20) + `"}],"input":"` + strings.Repeat("x", 70) + "\xff" + `","system":"` + strings.Repeat("s", 80) + `"}`,
	`{"choices":[{"index":0,"message":{"content":"` + strings.Repeat("a long plain answer ", 5) + `"}}],"output":[{"type":"message","content":[{"type":"output_text","text":"` +
		strings.Repeat("t", 90) + `"}]}],"content":[{"type":"text","text":"` + strings.Repeat(`u\u00e9`, 30) + `"}],"candidates":[{"content":{"parts":[{"text":"` + strings.Repeat("g", 65) + `"}]}}]}`,
	// Texts of 512 bytes or more, which the decoder walks with a SkipTable: nested values,
	// repeats and other spellings included.
	`{"model":"gpt-4o","tools":[{"type":"function","function":{"name":"f","description":"` + strings.Repeat("d", 300) + `"}}],"messages":[{"role":"user","content":[{"type":"text","text":"` +
		strings.Repeat("a long prompt in parts ", 20) + `"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}],"Stream":true}`,
	`{"choices":[{"index":0,"message":{"content":"` + strings.Repeat("x", 200) + `"}}],"choices":[{"index":0,"message":{"content":"` + strings.Repeat("a long answer ", 30) +
		`","tool_calls":[{"id":"a"},{"id":"b"}]},"logprobs":{"content":[{"token":"t","bytes":[1,2]}]}}],"usage":{"prompt_tokens":5,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":0}},"model":"m"}`,
}

var decodeFamilies = []Family{FamilyChat, FamilyResponses, FamilyEmbeddings, FamilyMessages}

// FuzzDecodeJSON runs every request parser and response decoder with the decoders they use
// (jsonx.Decode, DecodeShared, DecodeRequestShared, SharedString, readPlainChat,
// readPlainChatResponse) and with the decoder
// they replaced (encoding/json's Unmarshal and the spelling check), and requires
// the same result: the same error or not, and, without an error, equal requests and
// responses.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, fam := range decodeFamilies {
			got, gotErr := asIs(func() (any, error) { return ParseRequest(fam, body) })
			want, wantErr := withDecoder(jsonx.ReferenceDecode, jsonx.ReferenceDecodeRequest, func() (any, error) { return ParseRequest(fam, body) })
			compareDecoded(t, "ParseRequest("+fam.String()+")", got, gotErr, want, wantErr)
			if fam == FamilyEmbeddings {
				continue
			}
			if fam == FamilyResponses {
				got, gotErr := asIs(func() (any, error) { return StoredRequest(fam, body) })
				want, wantErr := withDecoder(jsonx.ReferenceDecode, jsonx.ReferenceDecodeRequest, func() (any, error) { return StoredRequest(fam, body) })
				compareDecoded(t, "StoredRequest", got, gotErr, want, wantErr)
			}
			for _, object := range []bool{false, true} {
				req := &Request{Family: fam, Object: object}
				got, gotErr := asIs(func() (any, error) { return DecodeResponse(fam, req, body) })
				want, wantErr := withDecoder(jsonx.ReferenceDecode, jsonx.ReferenceDecodeRequest, func() (any, error) { return DecodeResponse(fam, req, body) })
				compareDecoded(t, "DecodeResponse("+fam.String()+")", got, gotErr, want, wantErr)
			}
		}
	})
}

// withDecoder runs parse with d as the response decoder (of events and of whole bodies)
// and dr as the request decoder, and no decoder of the parsers' own (readPlainChat,
// readPlainChatResponse).
func withDecoder(d, dr func([]byte, any) error, parse func() (any, error)) (any, error) {
	saved, savedBody, savedRequest, savedChat, savedAnswer := decode, decodeBody, decodeRequest, fastChat, fastChatResponse
	decode, decodeBody, decodeRequest, fastChat, fastChatResponse = d, d, dr, nil, nil
	defer func() {
		decode, decodeBody, decodeRequest, fastChat, fastChatResponse = saved, savedBody, savedRequest, savedChat, savedAnswer
	}()
	return parse()
}

// asIs runs parse with the decoders the parsers use (jsonx.Decode, for whole bodies
// jsonx.DecodeShared and jsonx.DecodeRequestShared, readPlainChat and
// readPlainChatResponse).
func asIs(parse func() (any, error)) (any, error) { return parse() }

func compareDecoded(t *testing.T, what string, got any, gotErr error, want any, wantErr error) {
	t.Helper()
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Fatalf("%s: error %v, the reference decoder's %v", what, gotErr, wantErr)
	case gotErr != nil:
		if !errors.Is(gotErr, ErrMalformed) {
			t.Fatalf("%s: error %v does not match ErrMalformed", what, gotErr)
		}
	case !reflect.DeepEqual(got, want):
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func TestDecodeJSONRepeatedMembersMergeAsEncodingJSONMergesThem(t *testing.T) {
	// How a response is read. The second "messages" has no content: encoding/json decodes
	// it over the first and reads "first"; a parser keeping the last member reads no
	// content.
	var r chatRequest
	if err := jsonx.Decode([]byte(`{"messages":[{"role":"user","content":"first"}],"messages":[{"role":"assistant"}]}`), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 1 || r.Messages[0].Role != "assistant" || string(r.Messages[0].Content) != `"first"` {
		t.Fatalf("messages = %+v, want the assistant message with the first content", r.Messages)
	}
	// A shorter array cuts the slice; a longer one after it brings back the earlier
	// elements beneath the new ones, as encoding/json does.
	r = chatRequest{}
	if err := jsonx.Decode([]byte(`{"messages":[{"content":"a"},{"content":"b"},{"content":"c"}],"messages":[{"role":"user"}],"messages":[{},{"role":"user"},{}]}`), &r); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range r.Messages {
		texts = append(texts, string(m.Content))
	}
	if strings.Join(texts, ",") != `"a","b","c"` {
		t.Fatalf("texts = %q, want a,b,c", texts)
	}
	// The last of two scalars wins, as everywhere; null leaves the earlier one.
	r = chatRequest{}
	if err := jsonx.Decode([]byte(`{"model":"a","messages":[],"model":"b","model":null}`), &r); err != nil || r.Model != "b" {
		t.Fatalf("model = %q (%v), want b", r.Model, err)
	}
	// A response's repeated member is read as that merge.
	resp, err := DecodeResponse(FamilyChat, &Request{}, []byte(`{"choices":[{"index":0,"message":{"content":"x"}}],"choices":[{"index":0,"message":{"content":"y"}}]}`))
	if err != nil || len(resp.Contents) != 1 || resp.Contents[0].Text != "y" {
		t.Fatalf("contents = %+v (%v), want y", resp.Contents, err)
	}
}

func TestParseRequestRefusesAFieldNamedTwice(t *testing.T) {
	for _, tc := range []struct {
		f    Family
		body string
	}{
		{FamilyChat, `{"messages":[{"role":"user","content":"harmful"}],"messages":[{"role":"user","content":"harmless"}]}`},
		{FamilyChat, `{"messages":[{"role":"user","content":"harmful"}],"\u006dessages":[]}`},
		{FamilyChat, `{"messages":[{"role":"user","content":"harmful","content":"harmless"}]}`},
		{FamilyChat, `{"messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`},
		{FamilyChat, `{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}","arguments":"{}"}}]}]}`},
		{FamilyChat, `{"messages":[],"stream":true,"stream":false}`},
		{FamilyChat, `{"messages":[],"model":"a","model":null}`},
		{FamilyResponses, `{"input":"a","input":[]}`},
		{FamilyResponses, `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","arguments":"{}"}]}`},
		{FamilyResponses, `{"input":"a","background":false,"background":true}`},
		{FamilyEmbeddings, `{"input":"a","input":"b"}`},
		{FamilyMessages, `{"system":"a","system":"b","messages":[]}`},
		{FamilyMessages, `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a","text":"b"}]}]}]}`},
		{FamilyMessages, `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","data":"a","data":"b"}}]}]}`},
	} {
		_, err := ParseRequest(tc.f, []byte(tc.body))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "is repeated") {
			t.Errorf("%s %s: error %v, want the repeated member refused", tc.f, tc.body, err)
		}
	}
	// Members the guard does not read may repeat.
	if _, err := ParseRequest(FamilyChat, []byte(`{"messages":[],"metadata":{"a":1},"metadata":{"a":2},"temperature":1,"temperature":0}`)); err != nil {
		t.Errorf("error %v for repeated members the guard does not read", err)
	}
}

func TestDecodeJSONRefusesTwoSpellingsOfAField(t *testing.T) {
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"harmless"}],"Messages":[{"role":"user","content":"other"}]}`,
		`{"messages":[{"role":"user","content":"harmless","CONTENT":"other"}]}`,
		`{"messages":[{"role":"user","content":"harmless"}],"meſſages":[]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a","\u0054ext":"b"}]}]}`,
	} {
		_, err := ParseRequest(FamilyChat, []byte(body))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "both name field") {
			t.Errorf("%s: error %v, want two spellings refused", body, err)
		}
	}
	// One spelling, even not the canonical one, is read: a server decoding with
	// encoding/json reads it too.
	req, err := ParseRequest(FamilyChat, []byte(`{"Messages":[{"Role":"user","CONTENT":"judge me"}]}`))
	if err != nil || len(req.Messages) != 1 || len(req.Messages[0].Parts) != 1 || req.Messages[0].Parts[0].Text != "judge me" {
		t.Fatalf("request = %+v (%v), want the message read", req, err)
	}
}

func TestDecodeJSONWrongTypesAreMalformed(t *testing.T) {
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"x"}],"n":1.5}`,
		`{"messages":[{"role":"user","content":"x"}],"n":"2"}`,
		`{"messages":[{"role":"user","content":"x"}],"stream":1}`,
		`{"messages":[{"role":"user","content":"x"}],"n":99999999999999999999}`,
		`{"messages":"x"}`,
		`{"messages":[{"role":"user","content":"x"}]`,
		`{"messages":[{"role":"user","content":"x"}]} {}`,
	} {
		if _, err := ParseRequest(FamilyChat, []byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", body, err)
		}
	}
}

// plainChatSeeds are chat requests readPlainChat reads, and near misses it leaves to the
// decoder: other members the guard reads, other spellings, repeats, nulls, wrong types.
var plainChatSeeds = []string{
	`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"` + strings.Repeat("a long plain prompt ", 8) + `"}]}`,
	`{"model":"m","temperature":0.2,"messages":[{"role":"user","name":"a","content":[{"type":"text","text":"hi"}]},null,{}],"stream":false,"max_tokens":5}`,
	` { "messages" : [ ] , "stream" : true , "model" : null } `,
	`{"messages":null,"user":"x","metadata":{"model":"y","Messages":1}}`,
	`{"Model":"m","messages":[]}`, `{"model":"m","model":"n"}`, `{"model":null,"model":"n"}`, `{"messages":[{"role":"user","role":"user"}]}`,
	`{"messages":[{"ROLE":"user"}]}`, `{"messages":[{"role":"user","content":"x","tool_call_id":"t"}]}`, `{"model":"m","n":2}`,
	`{"model":"m","tools":[]}`, `{"m\u006fdel":"m"}`, `{"modél":"m"}`, `{"model":5}`, `{"stream":"yes"}`, `{"stream":null}`,
	`{"messages":{}}`, `{"messages":[5]}`, `{"messages":[{"role":5}]}`, `{"messages":[{"content":null}]}`, `{"model":"m"`, `[]`, `null`,
	`{"model":"` + strings.Repeat("m", 70) + `","messages":[{"role":"` + strings.Repeat("r\n", 40) + `"}]}`,
}

// FuzzPlainChat: what readPlainChat reads, the decoder reads the same (and does not refuse).
func FuzzPlainChat(f *testing.F) {
	for _, s := range append(plainChatSeeds, decodeSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast chatRequest
		if !readPlainChat(body, &fast) {
			return
		}
		var slow, ref chatRequest
		if err := jsonx.DecodeRequestShared(body, &slow); err != nil {
			t.Fatalf("readPlainChat read %s, which the decoder refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("readPlainChat(%s):\n got  %+v\n want %+v", body, fast, slow)
		}
		if err := jsonx.ReferenceDecodeRequest(body, &ref); err != nil || !reflect.DeepEqual(fast, ref) {
			t.Fatalf("readPlainChat(%s) = %+v; the reference decoder reads %+v (%v)", body, fast, ref, err)
		}
	})
}

func TestReadPlainChatReadsTheLoadsRequestAndLeavesTheRest(t *testing.T) {
	var r chatRequest
	if !readPlainChat([]byte(plainChatSeeds[0]), &r) || r.Model != "gpt-4o-mini" || len(r.Messages) != 2 || r.Messages[1].Role != "user" {
		t.Fatalf("readPlainChat did not read a plain chat request: %+v", r)
	}
	for _, s := range []string{`{"Model":"m"}`, `{"model":"m","model":"n"}`, `{"model":"m","n":2}`, `{"m\u006fdel":"m"}`, `{"model":5}`,
		`{"messages":[{"role":"user","tool_calls":[]}]}`, `{"messages":[{"Content":"x"}]}`, `null`} {
		if readPlainChat([]byte(s), &chatRequest{}) {
			t.Errorf("readPlainChat read %s, which is the decoder's", s)
		}
	}
}

// plainChatResponseSeeds are chat completions readPlainChatResponse reads, and near misses
// it leaves to the decoder.
var plainChatResponseSeeds = []string{
	chatResponseBody,
	`{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("a long plain answer ", 40) + `","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0}},"service_tier":"default"}`,
	`{"choices":[null,{},{"index":1,"message":null,"finish_reason":null},{"index":2,"message":{"content":null,"reasoning":"r","reasoning_content":""}}],"usage":null,"model":null}`,
	`{"choices":[],"usage":{}}`, `{"choices":null}`, `{"model":5,"choices":[{"index":-0}]}`,
	`{"choices":[{"index":1.0}]}`, `{"choices":[{"index":1e2}]}`, `{"choices":[{"index":"1"}]}`, `{"choices":[{"index":1234567890123456}]}`,
	`{"choices":[{"message":{"tool_calls":[]}}]}`, `{"choices":[{"message":{"Content":"x"}}]}`, `{"Choices":[]}`, `{"choices":[],"choices":[]}`,
	`{"choices":[{"message":{"content":"a","content":"b"}}]}`, `{"choices":[{"finish_reason":5}]}`, `{"usage":{"prompt_tokens":"5"}}`,
	`{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`, `{"usage":[]}`, `{"choices":{}}`, `{"choices":[5]}`, `{"choices":[{"message":[]}]}`,
	`{"choices":[{"message":{"content":5}}]}`, `{"choices":[{"message":{"cont\u0065nt":"x"}}]}`, `null`, `[]`, `{"choices":[`,
}

// FuzzPlainChatResponse: what readPlainChatResponse reads, the decoder reads the same (and
// does not refuse).
func FuzzPlainChatResponse(f *testing.F) {
	for _, s := range append(plainChatResponseSeeds, decodeSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast chatResponse
		if !readPlainChatResponse(body, &fast) {
			return
		}
		var slow, ref chatResponse
		if err := jsonx.DecodeShared(body, &slow); err != nil {
			t.Fatalf("readPlainChatResponse read %s, which the decoder refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("readPlainChatResponse(%s):\n got  %+v\n want %+v", body, fast, slow)
		}
		if err := jsonx.ReferenceDecode(body, &ref); err != nil || !reflect.DeepEqual(fast, ref) {
			t.Fatalf("readPlainChatResponse(%s) = %+v; the reference decoder reads %+v (%v)", body, fast, ref, err)
		}
	})
}

func TestReadPlainChatResponseReadsAnAnswerAndLeavesTheRest(t *testing.T) {
	var r chatResponse
	if !readPlainChatResponse([]byte(plainChatResponseSeeds[1]), &r) || len(r.Choices) != 1 || r.Choices[0].Message.Content == nil ||
		r.Choices[0].FinishReason != "stop" || r.Usage == nil || r.Usage.CompletionTokens != 12 || string(r.Model) != `"gpt-4o-mini"` {
		t.Fatalf("readPlainChatResponse did not read a plain answer: %+v", r)
	}
	for _, s := range []string{chatResponseBody, `{"Choices":[]}`, `{"choices":[],"choices":[]}`, `{"choices":[{"index":1.0}]}`,
		`{"choices":[{"message":{"Content":"x"}}]}`, `null`} {
		if readPlainChatResponse([]byte(s), &chatResponse{}) {
			t.Errorf("readPlainChatResponse read %s, which is the decoder's", s)
		}
	}
}
