package jsonx

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// render writes what a walk of v finds, nested: member names, elements, scalars. With a
// table that holds v's text, the walk skips by the table; with an empty one, it scans.
func render(t *SkipTable, v []byte, out *bytes.Buffer) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		out.WriteString("<empty>")
		return
	}
	switch v[0] {
	case '{':
		it, _ := t.IterOf(v, '{')
		out.WriteByte('{')
		for {
			k, val, ok := it.Member()
			if !ok {
				break
			}
			out.WriteString(strconv.Quote(string(k)))
			out.WriteByte(':')
			render(t, val, out)
			out.WriteByte(',')
		}
		out.WriteString("}@" + strconv.Itoa(it.i))
	case '[':
		it, _ := t.IterOf(v, '[')
		out.WriteByte('[')
		for {
			e, ok := it.Elem()
			if !ok {
				break
			}
			render(t, e, out)
			out.WriteByte(',')
		}
		out.WriteString("]@" + strconv.Itoa(it.i))
	default:
		out.WriteString(strconv.Quote(string(v)))
	}
}

func walkWith(t *SkipTable, v []byte) string {
	var out bytes.Buffer
	render(t, v, &out)
	return out.String()
}

// A walk that skips by the table must find exactly what a walk that scans finds, and the
// table must validate exactly as Valid does.
func FuzzSkipTable(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":1}`, `{"a":"b\"}","c":[1,{"d":"]"}]}`, `{"a\\":"\\","b":"\\\""}`,
		` { "a" : [ 1 , "x" , { } , [ ] ] , "b" : null } `, `[[[["deep"]]],{"k":{"k":{"k":"v"}}}]`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi \"there\"\n","tool_calls":[{"index":0,"function":{"arguments":"{\"a\":[1]}"}}]},"finish_reason":null}],"usage":null}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9}]"}}`,
		`{"a":1}x`, `{"a":[1,2}`, `"just a string"`, `12`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tab SkipTable
		if got, want := tab.Validate(b), Valid(b); got != want {
			t.Fatalf("validate(%q) = %v, validJSON says %v", b, got, want)
		}
		if tab.data == nil {
			return
		}
		if got, want := walkWith(&tab, b), walkWith(&SkipTable{}, b); got != want {
			t.Fatalf("walk of %q with the table:\n%s\nscanning:\n%s", b, got, want)
		}
	})
}

// The table describes one text: once released, or for a slice of another array (a copy
// of the text edited), the walk scans.
func TestSkipTableOnlyServesTheTextItWasBuiltFor(t *testing.T) {
	// As long, and where text's first string ends, other's second one does: a stale entry
	// would pass for a string end and make one element of two.
	text := []byte(`["abcde",{"f":["g"]}]`)
	other := []byte(`["a","b",{"f":"gh"} ]`)
	if len(text) != len(other) {
		t.Fatal("test texts must be as long")
	}
	want := walkWith(&SkipTable{}, other)

	var tab SkipTable
	if !tab.Validate(text) {
		t.Fatal("not valid")
	}
	edited := make([]byte, len(text)) // as long and as large as text
	copy(edited, other)
	if got := walkWith(&tab, edited); got != want {
		t.Errorf("a copy walked with the table of the original:\n%s\nwant\n%s", got, want)
	}

	tab.Release()
	copy(text, other)
	if got := walkWith(&tab, text); got != want {
		t.Errorf("a reused buffer walked after release:\n%s\nwant\n%s", got, want)
	}
}

// Texts longer than the table serves are validated and walked by scanning.
func TestSkipTableLongText(t *testing.T) {
	long := []byte(`{"a":"` + strings.Repeat("x", maxSkipTable) + `","b":[{"c":"\"}"}]}`)
	var tab SkipTable
	if !tab.Validate(long) {
		t.Fatal("a long valid text is refused")
	}
	if tab.Validate(long[:len(long)-1]) {
		t.Fatal("a long invalid text is accepted")
	}
	if got, want := walkWith(&tab, long), walkWith(&SkipTable{}, long); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
