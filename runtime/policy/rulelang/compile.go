package rulelang

import (
	"fmt"
	"regexp"
)

// static is what the planner knows of an expression's type: enough to check answer fields.
type static uint8

const (
	sDyn static = iota
	sAnswers
	sScores
	sAnswer
)

type planned struct {
	n      node
	st     static
	isCon  bool // a constant as cel-go plans it (literals, constant lists and maps, folded conversions)
	con    value
	nodes  int64 // the planned tree's cost, after cel-go's runtime cost model (interpreter/runtimecost.go)
	keyStr string
	hasKey bool // a constant string (for missing-key messages)
}

type planner struct {
	scope []scopeVar
	slots int
}

type scopeVar struct {
	name string
	slot int
}

// typeNames are identifiers cel-go resolves to types (or to the root of a qualified type
// name such as policy.Answer or google.protobuf.Duration).
var typeNames = map[string]bool{
	"bool": true, "bytes": true, "double": true, "dyn": true, "int": true, "list": true, "map": true,
	"null_type": true, "string": true, "type": true, "uint": true, "policy": true, "google": true,
	"duration": true, "timestamp": true, "optional_type": true,
}

// unsupportedFuncs are functions of cel-go's standard library that rules may not call here.
var unsupportedFuncs = map[string]bool{
	"type": true, "dyn": true, "bytes": true, "duration": true, "timestamp": true,
	"getFullYear": true, "getMonth": true, "getDayOfYear": true, "getDate": true, "getDayOfMonth": true,
	"getDayOfWeek": true, "getHours": true, "getMinutes": true, "getSeconds": true, "getMilliseconds": true,
	"_in_": true, "__not_strictly_false__": true, "in": true,
}

// Costs, approximately cel-go's: constants are free, an identifier, field or call costs 1,
// logical operators and ?: cost nothing themselves, creating a list costs 10 and a map 30,
// and each iteration of a comprehension costs its body and 2 for its accumulator.
const (
	listCreateCost = 10
	mapCreateCost  = 30
	iterationCost  = 2
)

func con(v value) planned { return planned{n: &constNode{v}, isCon: true, con: v} }

func (p *planner) plan(e *expr) (planned, error) {
	switch e.kind {
	case xLit:
		out := con(e.lit)
		if e.lit.k == kString {
			out.keyStr, out.hasKey = e.lit.s, true
		}
		return out, nil
	case xIdent:
		for i := len(p.scope) - 1; i >= 0; i-- {
			if p.scope[i].name == e.name {
				return planned{n: &varNode{p.scope[i].slot}, nodes: 1}, nil
			}
		}
		switch e.name {
		case "answers":
			return planned{n: answersNode{}, st: sAnswers, nodes: 1}, nil
		case "scores":
			return planned{n: scoresNode{}, st: sScores, nodes: 1}, nil
		}
		if typeNames[e.name] {
			return planned{}, unsupported("type names (%s)", e.name)
		}
		return planned{}, fmt.Errorf("undeclared reference to '%s'", e.name)
	case xSelect, xHas:
		t, err := p.plan(e.target)
		if err != nil {
			return planned{}, err
		}
		ix := fieldIndex(e.name)
		if t.st == sAnswer && ix < 0 {
			return planned{}, fmt.Errorf("undefined field '%s'", e.name)
		}
		nodes := t.nodes + 1
		if e.kind == xHas {
			return planned{n: &hasNode{target: t.n, field: e.name, fieldIx: ix}, nodes: nodes}, nil
		}
		switch t.st {
		case sAnswers:
			if _, ok := t.n.(answersNode); ok {
				return planned{n: &answerKeyNode{key: e.name, missing: noSuchKey(e.name)}, st: sAnswer, nodes: nodes}, nil
			}
			return planned{n: &selectNode{target: t.n, field: e.name, fieldIx: ix, missing: noSuchKey(e.name)}, st: sAnswer, nodes: nodes}, nil
		case sScores:
			if _, ok := t.n.(scoresNode); ok {
				return planned{n: &scoreNode{key: e.name, missing: noSuchKey(e.name)}, nodes: nodes}, nil
			}
		case sAnswer:
			if k, ok := t.n.(*answerKeyNode); ok {
				return planned{n: &answerFieldNode{key: k.key, field: ix, missing: k.missing}, nodes: nodes}, nil
			}
		}
		return planned{n: &selectNode{target: t.n, field: e.name, fieldIx: ix, missing: noSuchKey(e.name)}, nodes: nodes}, nil
	case xList:
		elems := make([]node, len(e.args))
		vals := make([]value, len(e.args))
		allCon := true
		nodes := int64(listCreateCost)
		for i, a := range e.args {
			pa, err := p.plan(a)
			if err != nil {
				return planned{}, err
			}
			elems[i], vals[i] = pa.n, pa.con
			allCon = allCon && pa.isCon
			nodes += pa.nodes
		}
		if allCon {
			return con(listVal(vals)), nil
		}
		return planned{n: &listNode{elems}, nodes: nodes}, nil
	case xMap:
		return p.planMap(e)
	case xComp:
		return p.planComp(e)
	case xCall:
		return p.planCall(e)
	}
	return planned{}, unsupported("this expression")
}

// answerKeyNode is answers.<key>.
type answerKeyNode struct {
	key     string
	missing value
}

func (n *answerKeyNode) eval(c *ctx) value {
	if _, ok := c.answers[n.key]; !ok {
		return n.missing
	}
	return value{k: kAnswer, s: n.key}
}

func (p *planner) planMap(e *expr) (planned, error) {
	m := &mapNode{}
	allCon := true
	nodes := int64(mapCreateCost)
	var conVals []value
	for i, k := range e.keys {
		pk, err := p.plan(k)
		if err != nil {
			return planned{}, err
		}
		if !pk.isCon || (pk.con.k != kString && pk.con.k != kInt && pk.con.k != kUint && pk.con.k != kBool) {
			return planned{}, unsupported("map literals whose keys are not constant strings, ints, uints or bools")
		}
		pv, err := p.plan(e.args[i])
		if err != nil {
			return planned{}, err
		}
		nodes += pk.nodes + pv.nodes
		allCon = allCon && pv.isCon
		// A repeated key keeps its first position and its last value.
		dup := -1
		for j, prev := range m.keys {
			if prev.k == pk.con.k && prev.n == pk.con.n && prev.s == pk.con.s {
				dup = j
			}
		}
		if dup >= 0 {
			m.vals[dup] = pv.n
			conVals[dup] = pv.con
			continue
		}
		m.keys = append(m.keys, pk.con)
		m.vals = append(m.vals, pv.n)
		conVals = append(conVals, pv.con)
	}
	if allCon {
		return con(value{k: kMap, o: &mapLit{keys: m.keys, vals: conVals}}), nil
	}
	return planned{n: m, nodes: nodes}, nil
}

func (p *planner) planComp(e *expr) (planned, error) {
	r, err := p.plan(e.target)
	if err != nil {
		return planned{}, err
	}
	slot := p.slots
	p.slots++
	p.scope = append(p.scope, scopeVar{e.iter, slot})
	defer func() { p.scope = p.scope[:len(p.scope)-1] }()
	args := make([]planned, len(e.args))
	body := int64(iterationCost)
	for i, a := range e.args {
		if args[i], err = p.plan(a); err != nil {
			return planned{}, err
		}
		body += args[i].nodes
	}
	n := &compNode{rng: r.n, slot: slot, bodyCost: body}
	switch e.name {
	case "all":
		n.kind, n.pred = cAll, args[0].n
	case "exists":
		n.kind, n.pred = cExists, args[0].n
	case "exists_one":
		n.kind, n.pred = cExistsOne, args[0].n
	case "filter":
		n.kind, n.pred = cFilter, args[0].n
	case "map":
		n.kind = cMap
		if len(args) == 2 {
			n.pred, n.transform = args[0].n, args[1].n
		} else {
			n.transform = args[0].n
		}
	}
	return planned{n: n, nodes: r.nodes + body}, nil
}

func noMatchingOverload(name string) error {
	return fmt.Errorf("found no matching overload for '%s'", name)
}

func (p *planner) planCall(e *expr) (planned, error) {
	var target planned
	if e.target != nil {
		var err error
		if target, err = p.plan(e.target); err != nil {
			return planned{}, err
		}
	}
	args := make([]planned, len(e.args))
	nodes := int64(1) + target.nodes
	for i, a := range e.args {
		var err error
		if args[i], err = p.plan(a); err != nil {
			return planned{}, err
		}
		nodes += args[i].nodes
	}
	out := func(n node) (planned, error) { return planned{n: n, nodes: nodes}, nil }
	if e.target == nil {
		switch e.name {
		case "_?_:_":
			return planned{n: &condNode{args[0].n, args[1].n, args[2].n}, nodes: nodes - 1}, nil
		case "_&&_":
			return planned{n: &andNode{args[0].n, args[1].n}, nodes: nodes - 1}, nil
		case "_||_":
			return planned{n: &orNode{args[0].n, args[1].n}, nodes: nodes - 1}, nil
		case "!_":
			return out(&notNode{args[0].n})
		case "-_":
			return out(&negNode{args[0].n})
		case "_==_", "_!=_":
			return out(&eqNode{args[0].n, args[1].n, e.name == "_!=_"})
		case "_<_":
			return out(&relNode{args[0].n, args[1].n, opLt})
		case "_<=_":
			return out(&relNode{args[0].n, args[1].n, opLe})
		case "_>_":
			return out(&relNode{args[0].n, args[1].n, opGt})
		case "_>=_":
			return out(&relNode{args[0].n, args[1].n, opGe})
		case "_+_":
			return out(&arithNode{args[0].n, args[1].n, opAdd})
		case "_-_":
			return out(&arithNode{args[0].n, args[1].n, opSub})
		case "_*_":
			return out(&arithNode{args[0].n, args[1].n, opMul})
		case "_/_":
			return out(&arithNode{args[0].n, args[1].n, opDiv})
		case "_%_":
			return out(&arithNode{args[0].n, args[1].n, opMod})
		case "@in":
			if r := args[1]; r.isCon && r.con.k == kList {
				l := r.con.list()
				if len(l) == 0 {
					return con(vFalse), nil // cel-go does not evaluate the left side
				}
				if allPrimitive(l) {
					return out(newSetIn(args[0].n, l))
				}
			}
			return out(&inNode{args[0].n, args[1].n})
		case "_[_]":
			return p.planIndex(args[0], args[1], nodes)
		}
	}
	name := e.name
	switch {
	case name == "size" && e.target == nil && len(args) == 1:
		return out(&sizeNode{args[0].n})
	case name == "size" && e.target != nil && len(args) == 0:
		return out(&sizeNode{target.n})
	case (name == "contains" || name == "startsWith" || name == "endsWith") && e.target != nil && len(args) == 1:
		fn := map[string]strFn{"contains": fnContains, "startsWith": fnStartsWith, "endsWith": fnEndsWith}[name]
		return out(&strFnNode{fn: fn, recv: target.n, arg: args[0].n})
	case name == "matches" && ((e.target == nil && len(args) == 2) || (e.target != nil && len(args) == 1)):
		recv, pat := target, args[0]
		if e.target == nil {
			recv, pat = args[0], args[1]
		}
		n := &matchNode{recv: recv.n, pat: pat.n}
		if pat.isCon && pat.con.k == kString {
			re, err := regexp.Compile(pat.con.s)
			if err != nil {
				return planned{}, err // as cel-go's program planning fails
			}
			n.re = re
		}
		return out(n)
	case (name == "int" || name == "uint" || name == "double" || name == "string" || name == "bool") && e.target == nil && len(args) == 1:
		conv := map[string]func(value) value{"int": convInt, "uint": convUint, "double": convDouble, "string": convString, "bool": convBool}[name]
		if a := args[0]; a.isCon {
			// cel-go evaluates a conversion of a constant when it plans the program, and a
			// failure there is a failure to build the program.
			v := conv(a.con)
			if v.k == kErr {
				return planned{}, v.err()
			}
			c := con(v)
			if v.k == kString {
				c.keyStr, c.hasKey = v.s, true
			}
			return c, nil
		}
		return out(&convNode{conv: conv, a: args[0].n})
	case name == "size" || name == "contains" || name == "startsWith" || name == "endsWith" || name == "matches" ||
		name == "int" || name == "uint" || name == "double" || name == "string" || name == "bool":
		return planned{}, noMatchingOverload(name)
	case unsupportedFuncs[name]:
		return planned{}, unsupported("function '%s'", name)
	}
	if e.target == nil && name == "has" {
		return planned{}, noMatchingOverload(name)
	}
	return planned{}, fmt.Errorf("undeclared reference to '%s'", name)
}

func (p *planner) planIndex(t, i planned, nodes int64) (planned, error) {
	if i.hasKey {
		switch t.st {
		case sAnswers:
			if _, ok := t.n.(answersNode); ok {
				return planned{n: &answerKeyNode{key: i.keyStr, missing: noSuchKey(i.keyStr)}, st: sAnswer, nodes: nodes}, nil
			}
		case sScores:
			if _, ok := t.n.(scoresNode); ok {
				return planned{n: &scoreNode{key: i.keyStr, missing: noSuchKey(i.keyStr)}, nodes: nodes}, nil
			}
		}
	}
	n := &indexNode{target: t.n, index: i.n}
	if i.hasKey {
		n.missing = noSuchKey(i.keyStr)
	}
	st := sDyn
	if t.st == sAnswers {
		st = sAnswer
	}
	return planned{n: n, st: st, nodes: nodes}, nil
}
