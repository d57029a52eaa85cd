package rulelang

import (
	"fmt"
	"strconv"
)

// The parser follows cel-go's grammar (CEL.g4) and parser (parser/parser.go): operator
// precedence and associativity, literal forms, the elimination of an even run of '!' or '-',
// a '-' directly before a number being part of the literal, and the standard macros.

type exprKind uint8

const (
	xLit    exprKind = iota
	xIdent           // name
	xSelect          // target.name
	xHas             // has(target.name)
	xCall            // name(args) or target.name(args)
	xList            // [args]
	xMap             // {keys: vals}
	xComp            // a macro: target.name(iterVar, args...)
	xUnsupported
)

type expr struct {
	kind   exprKind
	pos    int
	lit    value
	name   string
	target *expr
	args   []*expr
	keys   []*expr
	iter   string // comprehension variable
	// isLit marks a literal written in the expression (cel-go plans it as a constant).
	isLit bool
}

// Errors

// Error is a rule that Parse refuses.
type parseError struct {
	msg string
}

func (e *parseError) Error() string { return e.msg }

func syntaxErr(pos int, msg string) error {
	return &parseError{fmt.Sprintf("syntax error at offset %d: %s", pos, msg)}
}

// UnsupportedPrefix starts the message of every refusal of an expression that is valid CEL
// but outside what guardrail rules may use.
const UnsupportedPrefix = "not supported in guardrail rules: "

func unsupported(format string, args ...any) error {
	return &parseError{UnsupportedPrefix + fmt.Sprintf(format, args...)}
}

const maxDepth = 250 // cel-go's default parser recursion limit

type parser struct {
	toks  []token
	p     int
	depth int
}

func (ps *parser) peek() token { return ps.toks[ps.p] }
func (ps *parser) next() token {
	t := ps.toks[ps.p]
	if t.kind != tEOF {
		ps.p++
	}
	return t
}

func (ps *parser) expect(k tokKind) error {
	t := ps.next()
	if t.kind != k {
		return syntaxErr(t.pos, fmt.Sprintf("expected %s, found %s", tokNames[k], t))
	}
	return nil
}

func (ps *parser) enter(pos int) error {
	ps.depth++
	if ps.depth > maxDepth {
		return syntaxErr(pos, "expression nested too deeply")
	}
	return nil
}

func parseExpr(src string) (*expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	ps := &parser{toks: toks}
	e, err := ps.expr()
	if err != nil {
		return nil, err
	}
	if t := ps.peek(); t.kind != tEOF {
		return nil, syntaxErr(t.pos, fmt.Sprintf("unexpected %s", t))
	}
	return e, nil
}

// expr: conditionalOr ('?' conditionalOr ':' expr)?
func (ps *parser) expr() (*expr, error) {
	if err := ps.enter(ps.peek().pos); err != nil {
		return nil, err
	}
	defer func() { ps.depth-- }()
	c, err := ps.binary(0)
	if err != nil {
		return nil, err
	}
	if ps.peek().kind != tQuestion {
		return c, nil
	}
	q := ps.next()
	t, err := ps.binary(0)
	if err != nil {
		return nil, err
	}
	if err := ps.expect(tColon); err != nil {
		return nil, err
	}
	f, err := ps.expr()
	if err != nil {
		return nil, err
	}
	return &expr{kind: xCall, pos: q.pos, name: "_?_:_", args: []*expr{c, t, f}}, nil
}

// Binary operator levels, loosest first; all are left-associative.
var levels = [][]tokKind{
	{tOr},
	{tAnd},
	{tEq, tNe, tLt, tLe, tGt, tGe, tIn},
	{tPlus, tMinus},
	{tStar, tSlash, tPercent},
}

var binaryNames = map[tokKind]string{
	tOr: "_||_", tAnd: "_&&_", tEq: "_==_", tNe: "_!=_", tLt: "_<_", tLe: "_<=_", tGt: "_>_", tGe: "_>=_",
	tIn: "@in", tPlus: "_+_", tMinus: "_-_", tStar: "_*_", tSlash: "_/_", tPercent: "_%_",
}

func (ps *parser) binary(level int) (*expr, error) {
	if level == len(levels) {
		return ps.unary()
	}
	l, err := ps.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := ps.peek()
		found := false
		for _, k := range levels[level] {
			if t.kind == k {
				found = true
			}
		}
		if !found {
			return l, nil
		}
		ps.next()
		if err := ps.enter(t.pos); err != nil {
			return nil, err
		}
		r, err := ps.binary(level + 1)
		ps.depth--
		if err != nil {
			return nil, err
		}
		l = &expr{kind: xCall, pos: t.pos, name: binaryNames[t.kind], args: []*expr{l, r}}
	}
}

// unary: member | '!'+ member | '-'+ member. A single '-' directly before a number is the
// number's sign.
func (ps *parser) unary() (*expr, error) {
	t := ps.peek()
	if t.kind != tNot && t.kind != tMinus {
		return ps.member()
	}
	n := 0
	for ps.peek().kind == t.kind {
		ps.next()
		n++
	}
	if t.kind == tMinus && n == 1 {
		if k := ps.peek().kind; k == tInt || k == tFloat {
			ps.p-- // the literal takes its sign
			return ps.member()
		}
	}
	m, err := ps.member()
	if err != nil {
		return nil, err
	}
	if n%2 == 0 {
		return m, nil
	}
	name := "!_"
	if t.kind == tMinus {
		name = "-_"
	}
	return &expr{kind: xCall, pos: t.pos, name: name, args: []*expr{m}}, nil
}

// member: primary ('.' id | '.' id '(' args ')' | '[' expr ']')*
func (ps *parser) member() (*expr, error) {
	e, err := ps.primary()
	if err != nil {
		return nil, err
	}
	for {
		t := ps.peek()
		switch t.kind {
		case tDot:
			ps.next()
			id := ps.next()
			switch id.kind {
			case tQuestion:
				return nil, syntaxErr(id.pos, "unsupported syntax '.?'")
			case tEscIdent:
				e = &expr{kind: xSelect, pos: t.pos, name: id.text, target: e}
			case tIdent:
				if ps.peek().kind == tLParen {
					open := ps.next()
					args, err := ps.exprList(tRParen)
					if err != nil {
						return nil, err
					}
					e, err = ps.callOrMacro(open.pos, id.text, e, args)
					if err != nil {
						return nil, err
					}
					continue
				}
				e = &expr{kind: xSelect, pos: t.pos, name: id.text, target: e}
			default:
				return nil, syntaxErr(id.pos, fmt.Sprintf("expected a field name after '.', found %s", id))
			}
		case tLBracket:
			ps.next()
			if ps.peek().kind == tQuestion {
				return nil, syntaxErr(t.pos, "unsupported syntax '[?'")
			}
			idx, err := ps.expr()
			if err != nil {
				return nil, err
			}
			if err := ps.expect(tRBracket); err != nil {
				return nil, err
			}
			e = &expr{kind: xCall, pos: t.pos, name: "_[_]", args: []*expr{e, idx}}
		default:
			return e, nil
		}
	}
}

// exprList parses comma-separated expressions up to the closing token (consumed).
func (ps *parser) exprList(closing tokKind) ([]*expr, error) {
	var args []*expr
	if ps.peek().kind == closing {
		ps.next()
		return args, nil
	}
	for {
		a, err := ps.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		t := ps.next()
		if t.kind == closing {
			return args, nil
		}
		if t.kind != tComma {
			return nil, syntaxErr(t.pos, fmt.Sprintf("expected ',' or %s, found %s", tokNames[closing], t))
		}
	}
}

var reserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "for": true, "function": true,
	"if": true, "import": true, "let": true, "loop": true, "package": true, "namespace": true, "return": true,
	"var": true, "void": true, "while": true,
}

func (ps *parser) primary() (*expr, error) {
	t := ps.next()
	switch t.kind {
	case tDot:
		if ps.peek().kind == tIdent {
			return nil, unsupported("identifiers with a leading '.' (.%s)", ps.peek().text)
		}
		return nil, syntaxErr(t.pos, "unexpected '.'")
	case tIdent:
		if reserved[t.text] {
			return nil, syntaxErr(t.pos, "reserved identifier: "+t.text)
		}
		if ps.peek().kind == tLParen {
			open := ps.next()
			args, err := ps.exprList(tRParen)
			if err != nil {
				return nil, err
			}
			return ps.callOrMacro(open.pos, t.text, nil, args)
		}
		// A qualified name followed by '{' constructs a message.
		j := ps.p
		for ps.toks[j].kind == tDot && ps.toks[j+1].kind == tIdent {
			j += 2
		}
		if ps.toks[j].kind == tLBrace {
			return nil, unsupported("message construction")
		}
		return &expr{kind: xIdent, pos: t.pos, name: t.text}, nil
	case tLParen:
		e, err := ps.expr()
		if err != nil {
			return nil, err
		}
		if err := ps.expect(tRParen); err != nil {
			return nil, err
		}
		return e, nil
	case tLBracket:
		if err := ps.enter(t.pos); err != nil {
			return nil, err
		}
		defer func() { ps.depth-- }()
		var elems []*expr
		if ps.peek().kind == tComma && ps.toks[ps.p+1].kind == tRBracket {
			ps.next() // [,] is an empty list
		}
		for ps.peek().kind != tRBracket {
			if ps.peek().kind == tQuestion {
				return nil, syntaxErr(ps.peek().pos, "unsupported syntax '?'")
			}
			e, err := ps.expr()
			if err != nil {
				return nil, err
			}
			elems = append(elems, e)
			if ps.peek().kind != tComma {
				break
			}
			ps.next()
		}
		if err := ps.expect(tRBracket); err != nil {
			return nil, err
		}
		return &expr{kind: xList, pos: t.pos, args: elems}, nil
	case tLBrace:
		if err := ps.enter(t.pos); err != nil {
			return nil, err
		}
		defer func() { ps.depth-- }()
		m := &expr{kind: xMap, pos: t.pos}
		if ps.peek().kind == tComma && ps.toks[ps.p+1].kind == tRBrace {
			ps.next() // {,} is an empty map
		}
		for ps.peek().kind != tRBrace {
			if ps.peek().kind == tQuestion {
				return nil, syntaxErr(ps.peek().pos, "unsupported syntax '?'")
			}
			k, err := ps.expr()
			if err != nil {
				return nil, err
			}
			if err := ps.expect(tColon); err != nil {
				return nil, err
			}
			v, err := ps.expr()
			if err != nil {
				return nil, err
			}
			m.keys = append(m.keys, k)
			m.args = append(m.args, v)
			if ps.peek().kind != tComma {
				break
			}
			ps.next()
		}
		if err := ps.expect(tRBrace); err != nil {
			return nil, err
		}
		return m, nil
	case tMinus: // the sign of a number literal
		n := ps.next()
		if n.kind != tInt && n.kind != tFloat {
			return nil, syntaxErr(t.pos, "unexpected '-'")
		}
		return literal(n, "-")
	case tInt, tUint, tFloat, tString, tTrue, tFalse, tNull:
		return literal(t, "")
	case tBytes:
		return nil, unsupported("bytes literals")
	}
	return nil, syntaxErr(t.pos, fmt.Sprintf("unexpected %s", t))
}

func literal(t token, sign string) (*expr, error) {
	e := &expr{kind: xLit, pos: t.pos, isLit: true}
	switch t.kind {
	case tInt:
		text, base := t.text, 10
		if len(text) > 2 && text[:2] == "0x" {
			text, base = text[2:], 16
		}
		i, err := strconv.ParseInt(sign+text, base, 64)
		if err != nil {
			return nil, syntaxErr(t.pos, "invalid int literal")
		}
		e.lit = intVal(i)
	case tUint:
		text, base := t.text, 10
		if len(text) > 2 && text[:2] == "0x" {
			text, base = text[2:], 16
		}
		u, err := strconv.ParseUint(text, base, 64)
		if err != nil {
			return nil, syntaxErr(t.pos, "invalid uint literal")
		}
		e.lit = uintVal(u)
	case tFloat:
		f, err := strconv.ParseFloat(sign+t.text, 64)
		if err != nil {
			return nil, syntaxErr(t.pos, "invalid double literal")
		}
		e.lit = doubleVal(f)
	case tString:
		s, err := unescape(t.text)
		if err != nil {
			return nil, syntaxErr(t.pos, err.Error())
		}
		e.lit = stringVal(s)
	case tTrue:
		e.lit = vTrue
	case tFalse:
		e.lit = vFalse
	case tNull:
		e.lit = value{k: kNull}
	}
	return e, nil
}

// Macros, as cel-go's standard macros (parser/macro.go).
func (ps *parser) callOrMacro(pos int, name string, target *expr, args []*expr) (*expr, error) {
	if target == nil {
		if name == "has" && len(args) == 1 {
			a := args[0]
			if a.kind != xSelect {
				return nil, syntaxErr(pos, "invalid argument to has() macro")
			}
			return &expr{kind: xHas, pos: pos, name: a.name, target: a.target}, nil
		}
		return &expr{kind: xCall, pos: pos, name: name, args: args}, nil
	}
	macro := false
	switch name {
	case "all", "exists", "exists_one", "filter":
		macro = len(args) == 2
	case "map":
		macro = len(args) == 2 || len(args) == 3
	}
	if !macro {
		return &expr{kind: xCall, pos: pos, name: name, target: target, args: args}, nil
	}
	v := args[0]
	if v.kind != xIdent {
		if name == "map" || name == "filter" {
			return nil, syntaxErr(v.pos, "argument is not an identifier")
		}
		return nil, syntaxErr(v.pos, "argument must be a simple name")
	}
	if v.name == "__result__" {
		return nil, syntaxErr(v.pos, "iteration variable overwrites accumulator variable")
	}
	return &expr{kind: xComp, pos: pos, name: name, target: target, iter: v.name, args: args[1:]}, nil
}
