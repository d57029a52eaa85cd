package builtin

import "strings"

// Keys that are not written right before the assignment operator: behind a type name, in a
// name/value pair, as an XML element, as the first argument of a call (see assign.go).

// typeNames are type names written between a variable and its value in typed declarations:
// Go "var apiKey string = …", TypeScript "const apiKey: string = …", Kotlin
// "val apiToken: String = …".
var typeNames = []string{"string", "str", "bytes", "char"}

// typedKey classifies the variable before the type name that begins at t, across the spaces
// and the ':' between them.
func typedKey(s string, t int) keyKind {
	j := t
	if j > 0 && s[j-1] == '&' {
		j-- // Rust: const API_TOKEN: &str = "…"
	}
	for n := 0; j > 0 && n < 4 && (s[j-1] == ' ' || s[j-1] == '\t'); n++ {
		j--
	}
	if j > 0 && s[j-1] == ':' {
		j--
		for n := 0; j > 0 && n < 4 && (s[j-1] == ' ' || s[j-1] == '\t'); n++ {
			j--
		}
	}
	if j == t {
		return keyNone
	}
	je := j
	for j > 0 && je-j < 64 && isWordByte(s[j-1]) {
		j--
	}
	if j == je || je-j >= 64 {
		return keyNone
	}
	return classifyKey(s[j:je])
}

// valueKeys are keys that hold the value of a setting named just before them.
var valueKeys = []string{"value", "content"}

// nameKeys are the keys that name such a setting.
var nameKeys = []string{"name", "key", "id", "property"}

// namedValueKey classifies the setting whose value key begins at k by the name given just
// before it, in the same element: an XML attribute (<add key="ApiKey" value="…"/>, <param
// name="password" value="…">), a JSON member ({"name": "api_key", "value": "…"}) or a YAML
// list item ("- name: DB_PASSWORD" then "value: …"). Between the name and the value key
// only white space and a ',' may stand.
func namedValueKey(s string, k int) keyKind {
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		k-- // the value key's opening quote
	}
	j := k
	for n := 0; j > 0 && n < 16 && (isSpace(s[j-1]) || s[j-1] == ','); n++ {
		j--
	}
	if j == k || j == 0 {
		return keyNone
	}
	// The name, quoted or not.
	ne := j
	if q := s[j-1]; q == '"' || q == '\'' {
		ne--
		j = ne
		for j > 0 && ne-j < 64 && s[j-1] != q && s[j-1] != '\n' {
			j--
		}
		if j == 0 || s[j-1] != q {
			return keyNone
		}
		name := s[j:ne]
		j--
		return nameKeyBefore(s, j, name)
	}
	for j > 0 && ne-j < 64 && (isWordByte(s[j-1]) || s[j-1] == '-' || s[j-1] == '.') {
		j--
	}
	if j == ne {
		return keyNone
	}
	return nameKeyBefore(s, j, s[j:ne])
}

// nameKeyBefore checks that the name that begins at j is assigned to one of nameKeys ('=' or
// ':' and optional spaces and quotes between them), and classifies it.
func nameKeyBefore(s string, j int, name string) keyKind {
	for n := 0; j > 0 && n < 4 && (s[j-1] == ' ' || s[j-1] == '\t'); n++ {
		j--
	}
	if j == 0 || s[j-1] != '=' && s[j-1] != ':' {
		return keyNone
	}
	j--
	for n := 0; j > 0 && n < 4 && (s[j-1] == ' ' || s[j-1] == '\t'); n++ {
		j--
	}
	if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
		j--
	}
	ke := j
	for j > 0 && ke-j < 16 && isAlpha(s[j-1]) {
		j--
	}
	if !wordIn(s[j:ke], nameKeys) || j > 0 && isWordByte(s[j-1]) {
		return keyNone
	}
	return classifyKey(name)
}

// elementAt handles the '>' at i that may end an XML start tag whose name is a key:
// <password>value</password>. The value is the element's text, up to its end tag.
func (c *Classifier) elementAt(sc *scanState, i int) {
	s := sc.s
	t := i
	for t > 0 && i-t < 64 && (isWordByte(s[t-1]) || s[t-1] == '-' || s[t-1] == '.' || s[t-1] == ':') {
		t--
	}
	if t == i || t == 0 || s[t-1] != '<' {
		return
	}
	name := s[t:i]
	local := name[strings.LastIndexByte(name, ':')+1:] // without a namespace prefix
	kind := classifyKey(local)
	if kind == keyNone {
		return
	}
	v := i + 1
	v, ve, ok := elementValue(s, v, name)
	if !ok {
		return
	}
	t = ve
	for t < len(s) && t-ve < maxElementBlanks && isSpace(s[t]) {
		t++
	}
	if t > ve && !strings.HasPrefix(s[t:], "</"+name+">") {
		// The end tag that decides the match is still to come after white space, which
		// ends the pending run of tokens: hold the value back from its start (pending.go).
		sc.hold(v)
	}
	c.emitSecret(sc, kind, v, ve)
}

// callArgAt handles the ',' at i that may separate a key and its value in a call:
// setProperty("db.password", "…"), define('AUTH_KEY', '…'), os.environ.setdefault("API_KEY",
// "…"). Both must be string literals, the key the call's first argument.
func (c *Classifier) callArgAt(sc *scanState, i int) {
	s := sc.s
	j := i
	for n := 0; j > 0 && n < 4 && s[j-1] == ' '; n++ {
		j--
	}
	if j == 0 || s[j-1] != '"' && s[j-1] != '\'' {
		return
	}
	q := s[j-1]
	ke := j - 1
	k := ke
	for k > 0 && ke-k < 64 && (isWordByte(s[k-1]) || s[k-1] == '-' || s[k-1] == '.') {
		k--
	}
	if k == ke || k < 2 || s[k-1] != q {
		return
	}
	open := k - 1
	for n := 0; open > 0 && n < 4 && s[open-1] == ' '; n++ {
		open--
	}
	if open == 0 || s[open-1] != '(' {
		return
	}
	kind := classifyKey(s[k:ke])
	if kind == keyNone {
		return
	}
	v := i + 1
	for n := 0; v < len(s) && n < 4 && (s[v] == ' ' || s[v] == '\t'); n++ {
		v++
	}
	if v < len(s) && s[v] != '"' && s[v] != '\'' {
		return // an expression, not a literal
	}
	c.secretValue(sc, kind, v, "")
}

// maxElementBlanks is how much white space may stand around an element's value when the
// value is on a line of its own (<password>\n    value\n  </password>).
const maxElementBlanks = 64

// elementValue finds the value of the element name whose text begins at v: a token, alone or
// on a line of its own, followed by the end tag (or by the end of the text, inside the white
// space or the tag).
func elementValue(s string, v int, name string) (int, int, bool) {
	a := v
	for a < len(s) && a-v < maxElementBlanks && isSpace(s[a]) {
		a++
	}
	if a > v && !strings.Contains(s[v:a], "\n") {
		return 0, 0, false // a value on the tag's line is written right after it
	}
	e := a
	for e < len(s) && e-a <= maxEncoded && isValueByte(s[e], '<') {
		e++
	}
	if e == a {
		return 0, 0, false
	}
	t := e
	for t < len(s) && t-e < maxElementBlanks && isSpace(s[t]) {
		t++
	}
	if a == v && t > e && t < len(s) {
		return 0, 0, false // a value on the tag's line ends the element
	}
	end := "</" + name + ">"
	if t < len(s) && !strings.HasPrefix(s[t:], end) && !strings.HasPrefix(end, s[t:]) {
		return 0, 0, false
	}
	return a, e, true
}
