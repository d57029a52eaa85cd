package rulelang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The lexer follows cel-go's CEL.g4 (parser/gen/CEL.g4 of cel-go v0.29.2): the same token
// forms, longest match, whitespace and // comments skipped.

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tEscIdent // `field name`, only valid after '.'
	tInt      // text without sign; hex keeps its 0x prefix
	tUint     // text without the u suffix
	tFloat
	tString // val is the token text (prefix and quotes included), decoded by the parser
	tBytes
	tTrue
	tFalse
	tNull
	tIn
	tEq    // ==
	tNe    // !=
	tLt    // <
	tLe    // <=
	tGt    // >
	tGe    // >=
	tAnd   // &&
	tOr    // ||
	tNot   // !
	tMinus // -
	tPlus
	tStar
	tSlash
	tPercent
	tQuestion
	tColon
	tDot
	tComma
	tLBracket
	tRBracket
	tLBrace
	tRBrace
	tLParen
	tRParen
)

var tokNames = [...]string{
	tEOF: "end of expression", tIdent: "identifier", tEscIdent: "escaped identifier", tInt: "int literal",
	tUint: "uint literal", tFloat: "double literal", tString: "string literal", tBytes: "bytes literal",
	tTrue: "'true'", tFalse: "'false'", tNull: "'null'", tIn: "'in'", tEq: "'=='", tNe: "'!='", tLt: "'<'",
	tLe: "'<='", tGt: "'>'", tGe: "'>='", tAnd: "'&&'", tOr: "'||'", tNot: "'!'", tMinus: "'-'", tPlus: "'+'",
	tStar: "'*'", tSlash: "'/'", tPercent: "'%'", tQuestion: "'?'", tColon: "':'", tDot: "'.'", tComma: "','",
	tLBracket: "'['", tRBracket: "']'", tLBrace: "'{'", tRBrace: "'}'", tLParen: "'('", tRParen: "')'",
}

type token struct {
	kind tokKind
	pos  int // byte offset
	text string
}

func (t token) String() string {
	switch t.kind {
	case tIdent, tInt, tUint, tFloat:
		return fmt.Sprintf("'%s'", t.text)
	}
	return tokNames[t.kind]
}

// lex splits expr into tokens.
func lex(expr string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(expr) {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			i++
			continue
		case c == '/' && i+1 < len(expr) && expr[i+1] == '/':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
			continue
		}
		start := i
		switch {
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])):
			kind, end := lexNumber(expr, i)
			text := expr[start:end]
			if kind == tUint {
				text = text[:len(text)-1]
			}
			toks = append(toks, token{kind, start, text})
			i = end
			continue
		case isLetter(c) || c == '_':
			// String prefixes: r, R, b, B and a bytes prefix followed by a raw one.
			j := i
			if c == 'b' || c == 'B' {
				j++
			}
			if j < len(expr) && (expr[j] == 'r' || expr[j] == 'R') {
				j++
			}
			if j > i && j < len(expr) && (expr[j] == '"' || expr[j] == '\'') {
				end, err := lexString(expr, j, j > i && (expr[j-1] == 'r' || expr[j-1] == 'R'))
				if err != nil {
					return nil, err
				}
				kind := tString
				if c == 'b' || c == 'B' {
					kind = tBytes
				}
				toks = append(toks, token{kind, start, expr[start:end]})
				i = end
				continue
			}
			for i < len(expr) && (isLetter(expr[i]) || isDigit(expr[i]) || expr[i] == '_') {
				i++
			}
			text := expr[start:i]
			kind := tIdent
			switch text {
			case "true":
				kind = tTrue
			case "false":
				kind = tFalse
			case "null":
				kind = tNull
			case "in":
				kind = tIn
			}
			toks = append(toks, token{kind, start, text})
			continue
		case c == '"' || c == '\'':
			end, err := lexString(expr, i, false)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tString, start, expr[start:end]})
			i = end
			continue
		case c == '`':
			j := i + 1
			for j < len(expr) && (isLetter(expr[j]) || isDigit(expr[j]) || strings.IndexByte("_.-/ ", expr[j]) >= 0) {
				j++
			}
			if j == i+1 || j >= len(expr) || expr[j] != '`' {
				return nil, syntaxErr(start, "invalid escaped identifier")
			}
			toks = append(toks, token{tEscIdent, start, expr[i+1 : j]})
			i = j + 1
			continue
		}
		two := ""
		if i+1 < len(expr) {
			two = expr[i : i+2]
		}
		kind := tEOF
		n := 2
		switch two {
		case "==":
			kind = tEq
		case "!=":
			kind = tNe
		case "<=":
			kind = tLe
		case ">=":
			kind = tGe
		case "&&":
			kind = tAnd
		case "||":
			kind = tOr
		}
		if kind == tEOF {
			n = 1
			switch c {
			case '<':
				kind = tLt
			case '>':
				kind = tGt
			case '!':
				kind = tNot
			case '-':
				kind = tMinus
			case '+':
				kind = tPlus
			case '*':
				kind = tStar
			case '/':
				kind = tSlash
			case '%':
				kind = tPercent
			case '?':
				kind = tQuestion
			case ':':
				kind = tColon
			case '.':
				kind = tDot
			case ',':
				kind = tComma
			case '[':
				kind = tLBracket
			case ']':
				kind = tRBracket
			case '{':
				kind = tLBrace
			case '}':
				kind = tRBrace
			case '(':
				kind = tLParen
			case ')':
				kind = tRParen
			default:
				r, _ := utf8.DecodeRuneInString(expr[i:])
				return nil, syntaxErr(start, fmt.Sprintf("unexpected character %q", r))
			}
		}
		toks = append(toks, token{kind, start, expr[i : i+n]})
		i += n
	}
	toks = append(toks, token{tEOF, len(expr), ""})
	return toks, nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isHex(c byte) bool    { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

// lexNumber scans NUM_FLOAT, NUM_INT or NUM_UINT at i, the longest that matches.
func lexNumber(s string, i int) (tokKind, int) {
	digits := func(j int) int {
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return j
	}
	exponent := func(j int) int { // end of an exponent at j, or j when there is none
		if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
			k := j + 1
			if k < len(s) && (s[k] == '+' || s[k] == '-') {
				k++
			}
			if k < len(s) && isDigit(s[k]) {
				return digits(k)
			}
		}
		return j
	}
	if s[i] == '.' {
		return tFloat, exponent(digits(i + 1))
	}
	if s[i] == '0' && i+2 < len(s) && s[i+1] == 'x' && isHex(s[i+2]) {
		j := i + 2
		for j < len(s) && isHex(s[j]) {
			j++
		}
		if j < len(s) && (s[j] == 'u' || s[j] == 'U') {
			return tUint, j + 1
		}
		return tInt, j
	}
	j := digits(i)
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		return tFloat, exponent(digits(j + 1))
	}
	if e := exponent(j); e > j {
		return tFloat, e
	}
	if j < len(s) && (s[j] == 'u' || s[j] == 'U') {
		return tUint, j + 1
	}
	return tInt, j
}

// lexString scans a quoted string whose opening quote is at i and returns the offset after its
// closing quote. Escape sequences are checked for their lexical form here and decoded by
// unescape.
func lexString(s string, i int, raw bool) (int, error) {
	q := s[i]
	triple := i+2 < len(s) && s[i+1] == q && s[i+2] == q
	if triple {
		closing := string([]byte{q, q, q})
		j := i + 3
		for j < len(s) {
			if strings.HasPrefix(s[j:], closing) {
				return j + 3, nil
			}
			if s[j] == '\\' && !raw {
				n, err := escapeLen(s, j)
				if err != nil {
					return 0, err
				}
				j += n
				continue
			}
			j++
		}
		return 0, syntaxErr(i, "unterminated string literal")
	}
	j := i + 1
	for j < len(s) {
		switch c := s[j]; {
		case c == q:
			return j + 1, nil
		case c == '\n' || c == '\r':
			return 0, syntaxErr(i, "unterminated string literal")
		case c == '\\' && !raw:
			n, err := escapeLen(s, j)
			if err != nil {
				return 0, err
			}
			j += n
		default:
			j++
		}
	}
	return 0, syntaxErr(i, "unterminated string literal")
}

// escapeLen is the length of the escape sequence at s[j] (a backslash), per CEL.g4's ESC_SEQ.
func escapeLen(s string, j int) (int, error) {
	bad := syntaxErr(j, "invalid escape sequence in string literal")
	if j+1 >= len(s) {
		return 0, bad
	}
	hexRun := func(from, n int) bool {
		if from+n > len(s) {
			return false
		}
		for k := from; k < from+n; k++ {
			if !isHex(s[k]) {
				return false
			}
		}
		return true
	}
	switch c := s[j+1]; c {
	case 'a', 'b', 'f', 'n', 'r', 't', 'v', '"', '\'', '\\', '?', '`':
		return 2, nil
	case '0', '1', '2', '3':
		if j+3 < len(s) && s[j+2] >= '0' && s[j+2] <= '7' && s[j+3] >= '0' && s[j+3] <= '7' {
			return 4, nil
		}
	case 'x', 'X':
		if hexRun(j+2, 2) {
			return 4, nil
		}
	case 'u':
		if hexRun(j+2, 4) {
			return 6, nil
		}
	case 'U':
		if hexRun(j+2, 8) {
			return 10, nil
		}
	}
	return 0, bad
}

// unescape returns the value of a string literal token, as CEL's language definition says
// ("String and Bytes Literals"): line ends normalized to \n, the quotes (one or three)
// removed and, unless the literal is raw (r or R before the quote), its escapes decoded.
// The lexer has already checked each escape's form (escapeLen); \x, \u, \U and octal
// escapes stand for code points, written in UTF-8.
func unescape(tok string) (string, error) {
	tok = newlineNormalizer.Replace(tok)
	raw := tok != "" && (tok[0] == 'r' || tok[0] == 'R')
	if raw {
		tok = tok[1:]
	}
	quotes := 1
	if len(tok) >= 6 && (strings.HasPrefix(tok, `"""`) || strings.HasPrefix(tok, "'''")) {
		quotes = 3
	}
	if len(tok) < 2*quotes || (tok[0] != '"' && tok[0] != '\'') || tok[:quotes] != tok[len(tok)-quotes:] {
		return "", errors.New("unable to unescape string")
	}
	body := tok[quotes : len(tok)-quotes]
	if raw || strings.IndexByte(body, '\\') < 0 {
		return body, nil
	}
	var b strings.Builder
	b.Grow(len(body))
	for len(body) > 0 {
		i := strings.IndexByte(body, '\\')
		if i < 0 {
			b.WriteString(body)
			break
		}
		b.WriteString(body[:i])
		n, err := escapeLen(body, i)
		if err != nil {
			return "", errors.New("unable to unescape string")
		}
		r, err := escapeValue(body[i+1 : i+n])
		if err != nil {
			return "", err
		}
		b.WriteRune(r)
		body = body[i+n:]
	}
	return b.String(), nil
}

var newlineNormalizer = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// simpleEscapes are the escapes of one character after the backslash.
var simpleEscapes = map[byte]rune{
	'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
	'\\': '\\', '\'': '\'', '"': '"', '`': '`', '?': '?',
}

// escapeValue is the code point of an escape, given what follows its backslash (a form
// escapeLen accepted).
func escapeValue(seq string) (rune, error) {
	if r, ok := simpleEscapes[seq[0]]; ok {
		return r, nil
	}
	base, digits := 8, seq // octal: three digits, the first 0-3
	switch seq[0] {
	case 'x', 'X', 'u', 'U':
		base, digits = 16, seq[1:]
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil || v > utf8.MaxRune || !utf8.ValidRune(rune(v)) {
		return 0, errors.New("invalid unicode code point")
	}
	return rune(v), nil
}
