package rulelang

import (
	"errors"
	"maps"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strings"
)

// node is a planned expression.
type node interface {
	eval(c *ctx) value
}

// ctx is one evaluation's state.
type ctx struct {
	answers  map[string]Answer
	scores   map[string]float64
	vars     []value
	cost     int64
	exceeded bool
}

// costLimit bounds the work of one evaluation, as the rules' cel.CostLimit(100000) does.
const costLimit = 100000

// charge adds n to the evaluation's cost and reports whether the limit is exceeded.
func (c *ctx) charge(n int64) bool {
	c.cost += n
	if c.cost > costLimit {
		c.exceeded = true
	}
	return c.exceeded
}

// eachKey calls f with each key of m, in Go's map order or sorted, until f returns false.
func eachKey[V any](m map[string]V, ordered bool, f func(value) bool) {
	keys := maps.Keys(m)
	if ordered {
		keys = slices.Values(slices.Sorted(keys))
	}
	for k := range keys {
		if !f(stringVal(k)) {
			return
		}
	}
}

type constNode struct{ v value }

func (n *constNode) eval(*ctx) value { return n.v }

type answersNode struct{}

func (answersNode) eval(*ctx) value { return value{k: kAnswers} }

type scoresNode struct{}

func (scoresNode) eval(*ctx) value { return value{k: kScores} }

type varNode struct{ slot int }

func (n *varNode) eval(c *ctx) value { return c.vars[n.slot] }

// noSuchKey is the error for a missing constant key (the key is part of the expression).
func noSuchKey(key string) value { return errVal(errors.New("no such key: " + key)) }

// answerFieldNode is answers.<key>.<field>.
type answerFieldNode struct {
	key     string
	field   int
	missing value
}

func (n *answerFieldNode) eval(c *ctx) value {
	a, ok := c.answers[n.key]
	if !ok {
		return n.missing
	}
	return answerField(&a, n.field)
}

var answerFields = []string{"type", "probability", "choice", "score"}

func fieldIndex(name string) int {
	for i, f := range answerFields {
		if f == name {
			return i
		}
	}
	return -1
}

func answerField(a *Answer, field int) value {
	switch field {
	case 0:
		return stringVal(a.Type)
	case 1:
		return doubleVal(a.Probability)
	case 2:
		return stringVal(a.Choice)
	case 3:
		return doubleVal(a.Score)
	}
	return errVal(errNoSuchField)
}

func fieldSet(a *Answer, field int) bool {
	switch field {
	case 0:
		return a.Type != ""
	case 1:
		return a.Probability != 0
	case 2:
		return a.Choice != ""
	}
	return a.Score != 0
}

// scoreNode is scores.<key>.
type scoreNode struct {
	key     string
	missing value
}

func (n *scoreNode) eval(c *ctx) value {
	f, ok := c.scores[n.key]
	if !ok {
		return n.missing
	}
	return doubleVal(f)
}

// selectNode is target.field on a map or an answer.
type selectNode struct {
	target  node
	field   string
	fieldIx int
	missing value
}

func (n *selectNode) eval(c *ctx) value {
	t := n.target.eval(c)
	switch {
	case t.k == kErr:
		return t
	case isMap(t.k):
		if v, ok := c.find(t, stringVal(n.field)); ok {
			return v
		}
		return n.missing
	case t.k == kAnswer:
		if n.fieldIx < 0 {
			return errVal(errNoSuchField)
		}
		a := c.answers[t.s]
		return answerField(&a, n.fieldIx)
	}
	return errVal(errNotSelectable)
}

// hasNode is has(target.field).
type hasNode struct {
	target  node
	field   string
	fieldIx int
}

func (n *hasNode) eval(c *ctx) value {
	t := n.target.eval(c)
	switch {
	case t.k == kErr:
		return t
	case isMap(t.k):
		_, ok := c.find(t, stringVal(n.field))
		return boolVal(ok)
	case t.k == kAnswer:
		if n.fieldIx < 0 {
			return errVal(errNoSuchField)
		}
		a := c.answers[t.s]
		return boolVal(fieldSet(&a, n.fieldIx))
	}
	return errVal(errNotSelectable)
}

// indexNode is target[index].
type indexNode struct {
	target, index node
	missing       value // the error for a missing constant key
}

func (n *indexNode) eval(c *ctx) value {
	t := n.target.eval(c)
	if t.k == kErr {
		return t
	}
	i := n.index.eval(c)
	if i.k == kErr {
		return i
	}
	switch {
	case t.k == kList:
		l := t.list()
		var ix int64
		switch i.k {
		case kInt:
			ix = i.i()
		case kUint:
			if i.n > math.MaxInt64 {
				return errVal(errIndexValue)
			}
			ix = int64(i.n)
		case kDouble:
			v, ok := doubleToInt64Lossless(i.f())
			if !ok {
				return errVal(errIndexValue)
			}
			ix = v
		default:
			return errVal(errIndexType)
		}
		if ix < 0 || ix >= int64(len(l)) {
			return errVal(errors.New("index out of bounds"))
		}
		return l[ix]
	case isMap(t.k):
		if v, ok := c.find(t, i); ok {
			return v
		}
		if n.missing.k == kErr {
			return n.missing
		}
		return errVal(errNoSuchKey)
	case t.k == kAnswer:
		if i.k != kString {
			return vNoOverload
		}
		ix := fieldIndex(i.s)
		if ix < 0 {
			return errVal(errNoSuchField)
		}
		a := c.answers[t.s]
		return answerField(&a, ix)
	}
	return noOverload("_[_]", t, i)
}

type notNode struct{ a node }

func (n *notNode) eval(c *ctx) value {
	v := n.a.eval(c)
	switch v.k {
	case kBool:
		return boolVal(!v.b())
	case kErr:
		return v
	}
	return noOverload("!_", v)
}

type negNode struct{ a node }

func (n *negNode) eval(c *ctx) value {
	v := n.a.eval(c)
	switch v.k {
	case kInt:
		if v.i() == math.MinInt64 {
			return vIntOverflow
		}
		return intVal(-v.i())
	case kDouble:
		return doubleVal(-v.f())
	case kErr:
		return v
	}
	return noOverload("-_", v)
}

type condNode struct{ c, t, f node }

func (n *condNode) eval(c *ctx) value {
	v := n.c.eval(c)
	switch v.k {
	case kBool:
		if v.b() {
			return n.t.eval(c)
		}
		return n.f.eval(c)
	case kErr:
		return v
	}
	return noOverload("_?_:_", v)
}

// andNode and orNode are CEL's commutative logical operators: false (true) wins over an
// error on either side; otherwise an error or a non-bool operand is the result.
type andNode struct{ l, r node }

func (n *andNode) eval(c *ctx) value {
	l := n.l.eval(c)
	if l.k == kBool && !l.b() {
		return l
	}
	r := n.r.eval(c)
	if r.k == kBool && !r.b() {
		return r
	}
	return logicalRest(l, r, "_&&_")
}

type orNode struct{ l, r node }

func (n *orNode) eval(c *ctx) value {
	l := n.l.eval(c)
	if l.k == kBool && l.b() {
		return l
	}
	r := n.r.eval(c)
	if r.k == kBool && r.b() {
		return r
	}
	return logicalRest(l, r, "_||_")
}

func logicalRest(l, r value, fn string) value {
	switch {
	case l.k == kErr:
		return l
	case l.k != kBool:
		return noOverload(fn, l)
	case r.k == kErr:
		return r
	case r.k != kBool:
		return noOverload(fn, r)
	}
	return l // both the same bool
}

// operands evaluates a strict binary operator's two sides, both of them, as cel-go does;
// failed is the left one's error, else the right one's, else the zero value.
func operands(c *ctx, ln, rn node) (l, r, failed value) {
	l, r = ln.eval(c), rn.eval(c)
	switch {
	case l.k == kErr:
		failed = l
	case r.k == kErr:
		failed = r
	}
	return l, r, failed
}

type eqNode struct {
	l, r node
	ne   bool
}

func (n *eqNode) eval(c *ctx) value {
	l, r, failed := operands(c, n.l, n.r)
	if failed.k == kErr {
		return failed
	}
	return boolVal(c.equal(l, r) != n.ne)
}

type relOp uint8

const (
	opLt relOp = iota
	opLe
	opGt
	opGe
)

type relNode struct {
	l, r node
	op   relOp
}

func (n *relNode) eval(c *ctx) value {
	l, r, failed := operands(c, n.l, n.r)
	if failed.k == kErr {
		return failed
	}
	cmp, err := compare(l, r)
	if err != nil {
		return errVal(err)
	}
	switch n.op {
	case opLt:
		return boolVal(cmp < 0)
	case opLe:
		return boolVal(cmp <= 0)
	case opGt:
		return boolVal(cmp > 0)
	}
	return boolVal(cmp >= 0)
}

type arithOp uint8

const (
	opAdd arithOp = iota
	opSub
	opMul
	opDiv
	opMod
)

type arithNode struct {
	l, r node
	op   arithOp
}

func (n *arithNode) eval(c *ctx) value {
	l, r, failed := operands(c, n.l, n.r)
	if failed.k == kErr {
		return failed
	}
	return c.arith(n.op, l, r)
}

func (c *ctx) arith(op arithOp, l, r value) value {
	if l.k != r.k {
		return vNoOverload
	}
	switch l.k {
	case kInt:
		a, b := l.i(), r.i()
		switch op {
		case opAdd:
			s := a + b
			if (b > 0 && s < a) || (b < 0 && s > a) {
				return vIntOverflow
			}
			return intVal(s)
		case opSub:
			s := a - b
			if (b > 0 && s > a) || (b < 0 && s < a) {
				return vIntOverflow
			}
			return intVal(s)
		case opMul:
			if a == 0 || b == 0 {
				return intVal(0)
			}
			p := a * b
			if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
				return vIntOverflow
			}
			return intVal(p)
		case opDiv:
			if b == 0 {
				return vDivZero
			}
			if a == math.MinInt64 && b == -1 {
				return vIntOverflow
			}
			return intVal(a / b)
		case opMod:
			if b == 0 {
				return vModZero
			}
			if a == math.MinInt64 && b == -1 {
				return vIntOverflow
			}
			return intVal(a % b)
		}
	case kUint:
		a, b := l.n, r.n
		switch op {
		case opAdd:
			s, carry := bits.Add64(a, b, 0)
			if carry != 0 {
				return vUintOverflow
			}
			return uintVal(s)
		case opSub:
			if b > a {
				return vUintOverflow
			}
			return uintVal(a - b)
		case opMul:
			hi, lo := bits.Mul64(a, b)
			if hi != 0 {
				return vUintOverflow
			}
			return uintVal(lo)
		case opDiv:
			if b == 0 {
				return vDivZero
			}
			return uintVal(a / b)
		case opMod:
			if b == 0 {
				return vModZero
			}
			return uintVal(a % b)
		}
	case kDouble:
		a, b := l.f(), r.f()
		switch op {
		case opAdd:
			return doubleVal(a + b)
		case opSub:
			return doubleVal(a - b)
		case opMul:
			return doubleVal(a * b)
		case opDiv:
			return doubleVal(a / b)
		}
	case kString:
		if op == opAdd {
			if c.charge(int64(len(l.s)+len(r.s)) / 100) {
				return vCost
			}
			return stringVal(l.s + r.s)
		}
	case kList:
		if op == opAdd {
			a, b := l.list(), r.list()
			if c.charge(int64(len(a) + len(b))) {
				return vCost
			}
			out := make([]value, 0, len(a)+len(b))
			return listVal(append(append(out, a...), b...))
		}
	}
	return vNoOverload
}

// inNode is `a in b` for a list or a map b.
type inNode struct{ l, r node }

func (n *inNode) eval(c *ctx) value {
	l, r, failed := operands(c, n.l, n.r)
	if failed.k == kErr {
		return failed
	}
	switch {
	case r.k == kList:
		list := r.list()
		if c.charge(int64(len(list))) {
			return vCost
		}
		for _, e := range list {
			if c.equal(l, e) {
				return vTrue
			}
		}
		return vFalse
	case isMap(r.k):
		_, ok := c.find(r, l)
		return boolVal(ok)
	}
	return noOverload("@in", l, r)
}

// setInNode is `a in [constants]`, which cel-go plans as a lookup in a set of the constants
// and of their lossless conversions to the other numeric types (interpreter.Optimize's
// maybeOptimizeSetMembership): its numeric matches differ from ==, and it mirrors them.
type setInNode struct {
	l       node
	ints    map[int64]bool
	uints   map[uint64]bool
	doubles map[float64]bool
	strs    map[string]bool
	bools   [2]bool
}

func newSetIn(l node, elems []value) *setInNode {
	n := &setInNode{l: l, ints: map[int64]bool{}, uints: map[uint64]bool{}, doubles: map[float64]bool{}, strs: map[string]bool{}}
	for _, e := range elems {
		switch e.k {
		case kBool:
			n.bools[e.n] = true
		case kString:
			n.strs[e.s] = true
		case kInt:
			n.ints[e.i()] = true
			n.doubles[float64(e.i())] = true
			if e.i() >= 0 {
				n.uints[e.n] = true
			}
		case kUint:
			n.uints[e.n] = true
			n.doubles[float64(e.n)] = true
			if e.n <= math.MaxInt64 {
				n.ints[int64(e.n)] = true
			}
		case kDouble:
			f := e.f()
			n.doubles[f] = true
			if i, ok := doubleToInt64Checked(f); ok && !math.IsNaN(f) && cmpDoubleInt(f, i) == 0 {
				n.ints[i] = true
			}
			if u, ok := doubleToUint64Checked(f); ok && !math.IsNaN(f) && cmpDoubleUint(f, u) == 0 {
				n.uints[u] = true
			}
		}
	}
	return n
}

func (n *setInNode) eval(c *ctx) value {
	v := n.l.eval(c)
	switch v.k {
	case kErr:
		return v
	case kBool:
		return boolVal(n.bools[v.n])
	case kString:
		return boolVal(n.strs[v.s])
	case kInt:
		return boolVal(n.ints[v.i()])
	case kUint:
		return boolVal(n.uints[v.n])
	case kDouble:
		return boolVal(n.doubles[v.f()])
	}
	return vFalse
}

// allPrimitive reports whether cel-go would plan `in` over this constant list as a set.
func allPrimitive(l []value) bool {
	for _, e := range l {
		switch e.k {
		case kBool, kInt, kUint, kDouble, kString:
		default:
			return false
		}
	}
	return true
}

type sizeNode struct{ a node }

func (n *sizeNode) eval(c *ctx) value {
	v := n.a.eval(c)
	switch {
	case v.k == kErr:
		return v
	case v.k == kString:
		return intVal(strSize(v.s))
	case v.k == kList || isMap(v.k):
		return intVal(int64(c.size(v)))
	}
	return noOverload("size", v)
}

type strFn uint8

const (
	fnContains strFn = iota
	fnStartsWith
	fnEndsWith
)

var strFnNames = [...]string{"contains", "startsWith", "endsWith"}

type strFnNode struct {
	fn   strFn
	recv node
	arg  node
}

func (n *strFnNode) eval(c *ctx) value {
	r := n.recv.eval(c)
	a := n.arg.eval(c)
	if r.k == kErr {
		return r
	}
	if a.k == kErr {
		return a
	}
	if r.k != kString || a.k != kString {
		return noOverload(strFnNames[n.fn], r, a)
	}
	if c.charge(int64(len(r.s)) / 100) {
		return vCost
	}
	switch n.fn {
	case fnContains:
		return boolVal(strings.Contains(r.s, a.s))
	case fnStartsWith:
		return boolVal(strings.HasPrefix(r.s, a.s))
	}
	return boolVal(strings.HasSuffix(r.s, a.s))
}

// matchNode is matches(); re is the compiled pattern when the pattern is a constant.
type matchNode struct {
	recv, pat node
	re        *regexp.Regexp
}

func (n *matchNode) eval(c *ctx) value {
	r := n.recv.eval(c)
	p := n.pat.eval(c)
	if r.k == kErr {
		return r
	}
	if p.k == kErr {
		return p
	}
	if r.k != kString || p.k != kString {
		return noOverload("matches", r, p)
	}
	if c.charge(int64(len(r.s)) / 10) {
		return vCost
	}
	re := n.re
	if re == nil {
		var err error
		if re, err = regexp.Compile(p.s); err != nil {
			return errVal(errBadRegexp)
		}
	}
	return boolVal(re.MatchString(r.s))
}

type convNode struct {
	conv func(value) value
	a    node
}

func (n *convNode) eval(c *ctx) value {
	v := n.a.eval(c)
	if v.k == kErr {
		return v
	}
	return n.conv(v)
}

type listNode struct{ elems []node }

func (n *listNode) eval(c *ctx) value {
	if c.charge(int64(len(n.elems)) / 10) {
		return vCost
	}
	out := make([]value, len(n.elems))
	for i, e := range n.elems {
		v := e.eval(c)
		if v.k == kErr {
			return v
		}
		out[i] = v
	}
	return listVal(out)
}

type mapNode struct {
	keys []value
	vals []node
}

func (n *mapNode) eval(c *ctx) value {
	if c.charge(int64(len(n.vals)) / 10) {
		return vCost
	}
	m := &mapLit{keys: n.keys, vals: make([]value, len(n.vals))}
	for i, e := range n.vals {
		v := e.eval(c)
		if v.k == kErr {
			return v
		}
		m.vals[i] = v
	}
	return value{k: kMap, o: m}
}

type compKind uint8

const (
	cAll compKind = iota
	cExists
	cExistsOne
	cMap
	cFilter
)

// compNode is a comprehension macro over a list's elements or a map's keys.
type compNode struct {
	kind      compKind
	rng       node
	slot      int
	pred      node // the predicate, or map's filter (nil without one)
	transform node // map's transform
	bodyCost  int64
}

func (n *compNode) eval(c *ctx) value {
	r := n.rng.eval(c)
	if r.k == kErr {
		return r
	}
	if r.k != kList && !isMap(r.k) {
		return errVal(errNotIterable)
	}
	switch n.kind {
	case cAll, cExists:
		// The accumulator starts at true (false); the loop goes on while it is not false
		// (true), and each step is accu && pred (accu || pred).
		want := n.kind == cExists
		acc := boolVal(!want)
		c.iterate(r, false, func(k value) bool {
			if c.charge(n.bodyCost) {
				return false
			}
			c.vars[n.slot] = k
			p := n.pred.eval(c)
			switch {
			case p.k == kBool && p.b() == want:
				acc = p
				return false
			case acc.k == kErr:
			case p.k == kErr:
				acc = p
			case p.k != kBool:
				acc = noOverload("_&&_", p)
			}
			return true
		})
		if c.exceeded {
			return vCost
		}
		return acc
	case cExistsOne:
		count := 0
		var err value
		c.iterate(r, false, func(k value) bool {
			if c.charge(n.bodyCost) {
				return false
			}
			c.vars[n.slot] = k
			p := n.pred.eval(c)
			switch {
			case p.k == kErr:
				err = p
			case p.k != kBool:
				err = noOverload("_?_:_", p)
			case p.b():
				count++
			}
			return err.k != kErr
		})
		switch {
		case c.exceeded:
			return vCost
		case err.k == kErr:
			return err
		}
		return boolVal(count == 1)
	}
	out := []value{}
	var err value
	c.iterate(r, true, func(k value) bool {
		if c.charge(n.bodyCost + int64(len(out))/10) {
			return false
		}
		c.vars[n.slot] = k
		if n.pred != nil {
			p := n.pred.eval(c)
			switch {
			case p.k == kErr:
				err = p
				return false
			case p.k != kBool:
				err = noOverload("_?_:_", p)
				return false
			case !p.b():
				return true
			}
		}
		if n.kind == cFilter {
			out = append(out, k)
			return true
		}
		v := n.transform.eval(c)
		if v.k == kErr {
			err = v
			return false
		}
		out = append(out, v)
		return true
	})
	switch {
	case c.exceeded:
		return vCost
	case err.k == kErr:
		return err
	}
	return listVal(out)
}

// iterate calls f with each element of a list or each key of a map until f returns false.
// The keys of answers and scores come in Go's map order, or sorted when ordered is set (for
// map() and filter(), whose results show the order).
func (c *ctx) iterate(r value, ordered bool, f func(value) bool) {
	switch r.k {
	case kList:
		for _, e := range r.list() {
			if !f(e) {
				return
			}
		}
	case kMap:
		for _, k := range r.o.(*mapLit).keys {
			if !f(k) {
				return
			}
		}
	case kAnswers:
		eachKey(c.answers, ordered, f)
	case kScores:
		eachKey(c.scores, ordered, f)
	}
}
