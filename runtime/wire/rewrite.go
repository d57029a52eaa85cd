package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/internal/jsonx"
)

// Member names a location can step through, encoded as negative path steps.
const (
	kMessages int32 = iota
	kContent
	kText
	kRefusal
	kInput
	kOutput
	kInstructions
	kSystem
	kSource
	kData
	kToolCalls
	kFunction
	kArguments
	kCustom
	kFunctionCall
	// Gemini's members, in both spellings its JSON parser accepts.
	kContents
	kParts
	kSystemInstruction
	kSystemInstructionSnake
	kFunctionCallCamel
	kArgs
	kRequests
	kTitle
	kGenerateContentRequest
	kGenerateContentRequestSnake
)

var keyNames = [...]string{"messages", "content", "text", "refusal", "input", "output", "instructions", "system", "source", "data",
	"tool_calls", "function", "arguments", "custom", "function_call",
	"contents", "parts", "systemInstruction", "system_instruction", "functionCall", "args",
	"requests", "title", "generateContentRequest", "generate_content_request"}

const maxPath = 12

// loc is where a part's text (or a message) lives in the request body: a path of member
// names and array indexes, and the length of its prefix that a drop removes.
type loc struct {
	path [maxPath]int32
	n    uint8
	elem uint8
	// overflow: the path was too deep to record; the part cannot be rewritten.
	overflow bool
}

func (l loc) push(step int32) loc {
	if int(l.n) == maxPath {
		l.overflow = true
		return l
	}
	l.path[l.n] = step
	l.n++
	return l
}

// key appends a member name, idx an array index, mark makes the path so far the element a
// drop removes.
func (l loc) key(k int32) loc { return l.push(-(k + 1)) }
func (l loc) idx(i int) loc   { return l.push(int32(min(i, MaxParts))) }
func (l loc) mark() loc       { l.elem = l.n; return l }

func (l loc) valid() bool { return l.n > 0 && !l.overflow }

// at returns p with its location, remembering its text to tell edits apart.
func (p Part) at(l loc) Part {
	p.loc, p.orig = l, p.Text
	return p
}

// ErrNotRewritable is returned by RewriteRequest for an edit it cannot place in the body.
var ErrNotRewritable = errors.New("wire: request content cannot be rewritten")

type step struct {
	path  []int32
	value string
	drop  bool
	// raw: value is JSON written as it is (an Anthropic tool_use input object), not a
	// string.
	raw bool
}

// RewriteRequest returns body with the edits made to req, which ParseRequest returned for
// it: the Text of parts that changed (redactions), the Arguments of tool calls of the
// history that changed (pseudonymized values), and parts and messages marked Dropped
// removed. A dropped part whose message content is a plain string removes the
// message. Without edits it returns body itself; otherwise only the objects and arrays
// on the way to an edit are re-encoded (members in their order), and every other value
// keeps its bytes.
func RewriteRequest(body []byte, req *Request) ([]byte, error) {
	var steps []step
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Dropped {
			if !m.loc.valid() {
				return nil, fmt.Errorf("%w: message %d", ErrNotRewritable, i)
			}
			steps = append(steps, step{path: m.loc.path[:m.loc.elem], drop: true})
			continue
		}
		for j := range m.Parts {
			p := &m.Parts[j]
			if !p.Dropped && p.Text == p.orig {
				continue
			}
			if !p.loc.valid() || (p.Dropped && p.loc.elem == 0) || (!p.Dropped && p.Modality != classify.Text) {
				return nil, fmt.Errorf("%w: message %d part %d", ErrNotRewritable, i, j)
			}
			if p.Dropped {
				steps = append(steps, step{path: p.loc.path[:p.loc.elem], drop: true})
			} else {
				steps = append(steps, step{path: p.loc.path[:p.loc.n], value: p.Text})
			}
		}
		for j := range m.ToolCalls {
			c := &m.ToolCalls[j]
			if c.Arguments == c.orig {
				continue
			}
			if !c.loc.valid() || c.raw && !json.Valid([]byte(c.Arguments)) {
				return nil, fmt.Errorf("%w: message %d tool call %d", ErrNotRewritable, i, j)
			}
			steps = append(steps, step{path: c.loc.path[:c.loc.n], value: c.Arguments, raw: c.raw})
		}
	}
	if len(steps) == 0 {
		return body, nil
	}
	// Drops run after the edits, deepest and last first, so that no index shifts under a
	// later step.
	slices.SortStableFunc(steps, func(a, b step) int {
		if a.drop != b.drop {
			if a.drop {
				return 1
			}
			return -1
		}
		return -comparePaths(a.path, b.path)
	})
	doc := json.RawMessage(body)
	for _, s := range steps {
		var err error
		if doc, err = apply(doc, s.path, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotRewritable, err)
		}
	}
	return doc, nil
}

// comparePaths orders paths step by step, a prefix before its extensions.
func comparePaths(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// apply sets or drops the value at path within the JSON value v and returns the new v.
// Only the objects and arrays on the path are re-encoded, keeping their members' order;
// every other value keeps its bytes.
func apply(v json.RawMessage, path []int32, s *step) (json.RawMessage, error) {
	if len(path) == 0 {
		if s.raw {
			return json.RawMessage(s.value), nil
		}
		if _, ok := jsonx.RawString(v); !ok {
			return nil, errors.New("edited content is not a string")
		}
		return jsonx.Quote(s.value), nil
	}
	last := len(path) == 1 && s.drop
	if p := path[0]; p < 0 {
		name := keyNames[-p-1]
		obj, err := jsonx.ParseObject(v)
		if err != nil || obj.Get(name) == nil {
			return nil, fmt.Errorf("no member %q", name)
		}
		if last {
			obj.Del(name)
			return obj.Bytes(), nil
		}
		nv, err := apply(obj.Get(name), path[1:], s)
		if err != nil {
			return nil, err
		}
		obj.Set(name, nv)
		return obj.Bytes(), nil
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(v, &arr); err != nil || int(path[0]) >= len(arr) {
		return nil, fmt.Errorf("no element %d", path[0])
	}
	i := int(path[0])
	if last {
		return jsonx.MarshalArray(slices.Delete(arr, i, i+1)), nil
	}
	nv, err := apply(arr[i], path[1:], s)
	if err != nil {
		return nil, err
	}
	arr[i] = nv
	return jsonx.MarshalArray(arr), nil
}
