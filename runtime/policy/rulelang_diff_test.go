package policy

// The proof that runtime/policy/rulelang, the guard's own evaluator of guardrail rules,
// agrees with cel-go on them: the rule tests' expressions, a deterministic differential test
// over generated expressions and activations, and a fuzz target doing the same.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/celcheck"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/rulelang"
)

// outcome is one evaluator's verdict on an expression and an activation.
type outcome struct {
	refused string // why the expression was refused ("" when it was accepted)
	err     error  // the evaluation error
	match   bool
}

func (o outcome) String() string {
	switch {
	case o.refused != "":
		return "refused: " + o.refused
	case o.err != nil:
		return "error: " + o.err.Error()
	}
	return fmt.Sprint(o.match)
}

// celCase is an expression compiled by cel-go as the guard used to compile it
// (celcheck.Compile), with the keys it reads.
type celCase struct {
	prg     *celcheck.Program
	refused string
	answers []string
	scores  []string
}

func compileCEL(expr string) (cc celCase) {
	// cel-go v0.29.2 panics planning some expressions it type-checks, such as a map literal
	// with bytes keys ({b'0': 1}: "hash of unhashable type types.Bytes"); such a rule
	// could not be applied, so the case counts as cel-go refusing it.
	defer func() {
		if r := recover(); r != nil {
			cc = celCase{refused: fmt.Sprintf("cel-go panicked: %v", r)}
		}
	}()
	prg, err := celcheck.Compile(expr)
	if err != nil {
		return celCase{refused: err.Error()}
	}
	return celCase{prg: prg, answers: celKeyRefs(expr, "answers"), scores: celKeyRefs(expr, "scores")}
}

func (c celCase) eval(answers map[string]rulelang.Answer, scores map[string]float64) outcome {
	if c.prg == nil {
		return outcome{refused: c.refused}
	}
	m, err := c.prg.Eval(answers, scores)
	return outcome{err: err, match: m}
}

// parseEnv is a cel-go environment to parse with (standard macros).
var parseEnv = sync.OnceValue(func() *cel.Env {
	env, err := cel.NewEnv()
	if err != nil {
		panic(err)
	}
	return env
})

// celKeyRefs is what runtime/policy's mapKeyRefs returned over cel-go's AST before the
// guard evaluated rules with rulelang: the constant keys an expression reads from the map
// variable name, as in name.key, name['key'] and has(name.key), in cel-go's pre-order.
func celKeyRefs(expr, name string) []string {
	ast, iss := parseEnv().Parse(expr)
	if iss != nil && iss.Err() != nil {
		panic(iss.Err())
	}
	var keys []string
	isVar := func(e celast.Expr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == name
	}
	visit := celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.SelectKind:
			if s := e.AsSelect(); isVar(s.Operand()) {
				keys = append(keys, s.FieldName())
			}
		case celast.CallKind:
			c := e.AsCall()
			if c.FunctionName() != operators.Index || len(c.Args()) != 2 || !isVar(c.Args()[0]) {
				return
			}
			if k := c.Args()[1]; k.Kind() == celast.LiteralKind {
				if s, ok := k.AsLiteral().Value().(string); ok {
					keys = append(keys, s)
				}
			}
		}
	})
	celast.PreOrderVisit(celast.NavigateAST(ast.NativeRep()), visit)
	return keys
}

func evalRulelang(p *rulelang.Program, answers map[string]rulelang.Answer, scores map[string]float64) outcome {
	m, err := p.Eval(answers, scores)
	return outcome{err: err, match: m}
}

// agree reports whether the two verdicts are the same: the same bool, or both errors.
func agree(a, b outcome) bool {
	return (a.err != nil) == (b.err != nil) && (a.err != nil || a.match == b.match)
}

// refusalConstruct is the construct a "not supported" refusal names.
func refusalConstruct(err error) string {
	s := strings.TrimPrefix(err.Error(), rulelang.UnsupportedPrefix)
	if i := strings.Index(s, " ("); i > 0 {
		s = s[:i]
	}
	return s
}

// diffStats counts a differential run's cases.
type diffStats struct {
	cases, celRefused, agreed int
	refusedBy                 map[string]int
	trues, falses, errs       int // cel-go's results on the activations of the accepted cases
}

// check runs one expression against the activations; it returns a failure description, or "".
func (st *diffStats) check(expr string, acts []activation) string {
	st.cases++
	cc := compileCEL(expr)
	if cc.prg == nil {
		st.celRefused++
		return ""
	}
	p, err := rulelang.Parse(expr)
	if err != nil {
		if !rulelang.IsUnsupported(err) || !strings.HasPrefix(err.Error(), "not supported in guardrail rules: ") {
			return fmt.Sprintf("%s: cel-go accepts it, rulelang refuses it: %v", expr, err)
		}
		if st.refusedBy == nil {
			st.refusedBy = map[string]int{}
		}
		st.refusedBy[refusalConstruct(err)]++
		return ""
	}
	if got, want := p.KeyRefs("answers"), cc.answers; !slices.Equal(got, want) {
		return fmt.Sprintf("%s: KeyRefs(answers) = %q, mapKeyRefs = %q", expr, got, want)
	}
	if got, want := p.KeyRefs("scores"), cc.scores; !slices.Equal(got, want) {
		return fmt.Sprintf("%s: KeyRefs(scores) = %q, mapKeyRefs = %q", expr, got, want)
	}
	for _, act := range acts {
		want := cc.eval(act.answers, act.scores)
		got := evalRulelang(p, act.answers, act.scores)
		switch {
		case want.err != nil:
			st.errs++
		case want.match:
			st.trues++
		default:
			st.falses++
		}
		if !agree(got, want) {
			return fmt.Sprintf("%s\n\twith %v\n\tcel-go:   %v\n\trulelang: %v", expr, act, want, got)
		}
	}
	st.agreed++
	return ""
}

func (st *diffStats) report(t *testing.T) {
	refused := 0
	var by []string
	for c, n := range st.refusedBy {
		refused += n
		by = append(by, fmt.Sprintf("%s: %d", c, n))
	}
	sort.Strings(by)
	t.Logf("%d cases: cel-go refused %d; of the %d it accepted, rulelang agreed on %d and refused %d (%s); "+
		"the agreed evaluations were %d true, %d false, %d errors",
		st.cases, st.celRefused, st.cases-st.celRefused, st.agreed, refused, strings.Join(by, "; "), st.trues, st.falses, st.errs)
}

type activation struct {
	answers map[string]rulelang.Answer
	scores  map[string]float64
}

func (a activation) String() string {
	keys := make([]string, 0, len(a.answers))
	for k := range a.answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString("answers{")
	for _, k := range keys {
		x := a.answers[k]
		fmt.Fprintf(&sb, "%s:{%q %v %q %v} ", k, x.Type, x.Probability, x.Choice, x.Score)
	}
	sb.WriteString("} scores")
	fmt.Fprint(&sb, a.scores)
	return sb.String()
}

// TestRulelangAgreesOnRuleTests runs the expressions rule_test.go and answer_type_test.go
// had when the guard evaluated rules with cel-go. Of those cel-go accepts, rulelang refuses
// (as not supported):
//
//	type(answers.topic) == policy.Answer                             (function 'type')
//	answers.topic == policy.Answer{type: 'answer', choice: 'other'} (message construction)
//	answers.unsafe == policy.Answer{type: 'refusal'}                (message construction)
//	policy.Answer{score: 0.5}.score == 0.5                          (message construction)
//	dyn(answers.quality.probability) == 0.25                        (function 'dyn')
//
// and it agrees with cel-go on all the others.
func TestRulelangAgreesOnRuleTests(t *testing.T) {
	acts := []activation{
		{ // answer_type_test.go's activation
			answers: map[string]rulelang.Answer{
				"topic":   {Type: AnswerTypeAnswer, Choice: "other"},
				"unsafe":  {Type: AnswerTypeRefusal},
				"quality": {Type: AnswerTypeAnswer, Probability: 0.25, Score: 0.5},
			},
			scores: map[string]float64{"pii": 0.75},
		},
		{answers: map[string]rulelang.Answer{"topic": {Type: AnswerTypeAnswer, Choice: "billing"}, "unsafe": {Type: AnswerTypeAnswer, Probability: 0.81}},
			scores: map[string]float64{"credit-card": 0.9, "violence": 0, "x": math.NaN()}},
		{answers: map[string]rulelang.Answer{"quality": {Type: AnswerTypeAnswer, Score: 1}, "unsafe": {Type: AnswerTypeAnswer, Probability: 0.8}},
			scores: map[string]float64{"x": 0.6}},
		{answers: map[string]rulelang.Answer{"topic": {Type: AnswerTypeRefusal}, "unsafe": {Type: AnswerTypeRefusal}}, scores: map[string]float64{}},
		{answers: map[string]rulelang.Answer{}, scores: map[string]float64{"x": 0.7}},
	}
	exprs := []string{
		// rule_test.go
		"answers.topic.type == 'refusal' || answers.topic.choice == 'other'",
		"answers.unsafe.type == 'refusal' || answers.unsafe.probability > 0.8",
		"answers.quality.score < 1.0",
		"answers.unsafe.probability == 0.0",
		"scores['credit-card'] >= 0.9",
		"answers.topic.choice == 'other'",
		"scores['x'] > 0.5",
		"answers.topic.choice ==",
		"answers.topic.chioce == 'x'",
		"!has(answers.unsafe) && !has(scores.y)",
		// answer_type_test.go
		"answers.topic.type == 'answer' && answers.topic.choice == 'other'",
		"answers.unsafe.type == 'refusal' && answers.unsafe.probability == 0.0",
		"answers.quality.score < 1.0 && answers.quality.probability + 0.5 == 0.75",
		"has(answers.topic.choice) && !has(answers.topic.probability)",
		"has(answers.unsafe.type) && !has(answers.unsafe.choice)",
		"type(answers.topic) == policy.Answer",
		"answers.topic == policy.Answer{type: 'answer', choice: 'other'}",
		"answers.topic == answers.unsafe",
		"answers.unsafe == policy.Answer{type: 'refusal'}",
		"policy.Answer{score: 0.5}.score == 0.5",
		"'topic' in answers && !('missing' in answers)",
		"answers.topic.choice.startsWith('oth') && answers.topic.choice.matches('^o')",
		"size(answers.topic.choice) == 5 && answers.topic.choice in ['other', 'x']",
		"answers.all(q, answers[q].type == 'answer')",
		"answers.exists(q, answers[q].type == 'refusal')",
		"scores.pii > 0.5 && scores['pii'] < 1.0",
		"string(answers.quality.score) == '0.5'",
		"dyn(answers.quality.probability) == 0.25",
		"answers['topic'].choice == 'other'",
		"answers.topic.probability > 'x'",
		"answers.topic.choice > 1.0",
		"answers.topic",
		"policy.Answer{choice: 1.0}.choice == ''",
		"policy.Answer{nope: 1}.type == ''",
		"answers.topic.choice.lowerAscii() == 'other'",
		"answers.missing.choice == 'other'",
	}
	var st diffStats
	for _, expr := range exprs {
		if msg := st.check(expr, acts); msg != "" {
			t.Error(msg)
		}
	}
	st.report(t)
	if want := map[string]int{"function 'type'": 1, "message construction": 3, "function 'dyn'": 1}; fmt.Sprint(st.refusedBy) != fmt.Sprint(want) {
		t.Errorf("refused %v, want %v", st.refusedBy, want)
	}
}

// TestRulelangDifferential compares rulelang with cel-go on generated expressions, each
// against several generated activations.
func TestRulelangDifferential(t *testing.T) {
	const n = 20000
	rng := rand.New(rand.NewPCG(2026, 7))
	var st diffStats
	failures := 0
	for i := 0; i < n; i++ {
		g := &exprGen{rng: rng}
		expr := g.gen(g.pickType(), 1+rng.IntN(5))
		acts := []activation{randomActivation(rng), randomActivation(rng), randomActivation(rng)}
		if msg := st.check(expr, acts); msg != "" {
			t.Error(msg)
			if failures++; failures >= 10 {
				t.Fatal("too many disagreements")
			}
		}
	}
	st.report(t)
	if accepted := st.cases - st.celRefused; accepted < n/2 {
		t.Errorf("cel-go accepted only %d of %d generated expressions", accepted, n)
	}
}

// FuzzRulelangAgreesWithCEL checks that rulelang agrees with cel-go on any expression
// cel-go accepts (or refuses it as not supported), under activations drawn from seed.
func FuzzRulelangAgreesWithCEL(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		g := &exprGen{rng: rng}
		f.Add(g.gen(g.pickType(), 1+rng.IntN(5)), uint64(i))
	}
	for _, s := range []string{
		"answers.topic.choice == 'other' || scores['credit-card'] > 0.5",
		"[1, 'a', 2.0, 3u][0] == 1.0 && 2u in [1, 2.0]",
		"answers.exists(q, answers[q].type == 'refusal') && !has(scores.pii)",
		"{'a': 1, 'b': 'x'}.exists_one(k, k == 'a') ? 1 / 0 == 0 : false",
		"string(scores.pii) + '''x\\n''' + r'\\d' == 'a' && '\\u00e9\\101'.size() == 2",
		"-9223372036854775808 - 1 < 0 || [1, 2].map(x, x * 2, x > 1).size() == 1",
		"[scores.pii, 1][0].filter(x, x > 0) == []",
		"9223372036854775807 in [9.223372036854775807e18, 'x'] && 0.0 in [-0.0]",
	} {
		f.Add(s, uint64(len(s)))
	}
	f.Fuzz(func(t *testing.T, expr string, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var st diffStats
		if msg := st.check(expr, []activation{randomActivation(rng), randomActivation(rng)}); msg != "" {
			t.Error(msg)
		}
	})
}

// BenchmarkRulelangVsCEL evaluates three representative rules with cel-go (as the guard
// did before rulelang) and with rulelang (as it does now).
func BenchmarkRulelangVsCEL(b *testing.B) {
	rules := map[string]string{
		"topic":       "answers.topic.type == 'refusal' || answers.topic.choice == 'other'",
		"probability": "answers.unsafe.type == 'refusal' || answers.unsafe.probability > 0.8 || scores['credit-card'] >= 0.9",
		"exists":      "answers.exists(q, answers[q].type == 'refusal') || scores.violence > 0.5 && answers.topic.choice in ['weapons', 'crime']",
	}
	c := &Classifier{
		Questions:  []Question{{ID: "topic", Type: QuestionChoice}, {ID: "unsafe", Type: QuestionBoolean}, {ID: "quality", Type: QuestionScore}},
		Categories: []Category{{ID: "credit-card"}, {ID: "violence"}},
	}
	res := classify.Result{Scores: []float64{0.2, 0.7}, Answers: []classify.Answer{{Choice: "billing"}, {Probability: 0.3}, {Score: 0.9}}}
	act := NewActivation(c, res)
	for _, name := range []string{"topic", "probability", "exists"} {
		expr := rules[name]
		ref, err := celcheck.Compile(expr)
		if err != nil {
			b.Fatal(err)
		}
		p, err := rulelang.Parse(expr)
		if err != nil {
			b.Fatal(err)
		}
		want, _ := ref.Eval(act.answers, act.scores)
		if got, err := p.Eval(act.answers, act.scores); err != nil || got != want {
			b.Fatalf("%s: rulelang %v, %v; cel-go %v", name, got, err, want)
		}
		b.Run(name+"/cel-go", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ref.Eval(act.answers, act.scores); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/rulelang", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Eval(act.answers, act.scores); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Random activations: two or three questions, each answered or refused, sometimes one of
// them missing; one to three score categories; edge values.

var (
	questionIDs = []string{"topic", "unsafe", "quality"}
	categoryIDs = []string{"pii", "violence", "credit-card"}
	edgeDoubles = []float64{0, 0.25, 0.5, 0.75, 0.8, 0.9, 1, 2, -1, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 5e-324, 9.223372036854775807e18}
	edgeChoices = []string{"", "other", "billing", "weapons", "héllo", "Ünï ✓", "a\\b", "0", "1.5", "true"}
)

func randomActivation(rng *rand.Rand) activation {
	act := activation{answers: map[string]rulelang.Answer{}, scores: map[string]float64{}}
	nq := 2 + rng.IntN(2)
	for _, q := range questionIDs[:nq] {
		if rng.IntN(6) == 0 {
			continue // missing
		}
		if rng.IntN(4) == 0 {
			act.answers[q] = rulelang.Answer{Type: AnswerTypeRefusal}
			continue
		}
		act.answers[q] = rulelang.Answer{
			Type:        AnswerTypeAnswer,
			Probability: edgeDoubles[rng.IntN(len(edgeDoubles))],
			Choice:      edgeChoices[rng.IntN(len(edgeChoices))],
			Score:       edgeDoubles[rng.IntN(len(edgeDoubles))],
		}
	}
	nc := 1 + rng.IntN(3)
	for _, c := range categoryIDs[:nc] {
		if rng.IntN(8) == 0 {
			continue
		}
		act.scores[c] = edgeDoubles[rng.IntN(len(edgeDoubles))]
	}
	return act
}

// exprGen generates well-formed CEL expressions over the rules' environment, mostly
// well-typed, of every operator, function, macro and literal form rulelang supports (and a
// few it refuses).
type exprGen struct {
	rng  *rand.Rand
	vars []genVar // comprehension variables in scope
	nvar int
}

type genVar struct{ name, typ string }

// Types: bool int uint double string answer list:<elem> map dyn.
var genTypes = []string{"bool", "bool", "bool", "int", "uint", "double", "string", "list:int", "list:string", "list:double", "list:dyn", "map", "dyn"}

func (g *exprGen) pickType() string {
	if g.rng.IntN(4) != 0 {
		return "bool"
	}
	return genTypes[g.rng.IntN(len(genTypes))]
}

func (g *exprGen) pick(options ...string) string { return options[g.rng.IntN(len(options))] }

func (g *exprGen) scalarType() string {
	return g.pick("bool", "int", "uint", "double", "string", "int", "double", "string")
}

func (g *exprGen) answerKey() string { return g.pick("topic", "unsafe", "quality", "topic", "missing") }
func (g *exprGen) scoreKey() string  { return g.pick("pii", "violence", "pii", "nope") }

func (g *exprGen) answerExpr() string {
	switch g.rng.IntN(4) {
	case 0:
		return "answers['" + g.answerKey() + "']"
	default:
		return "answers." + g.answerKey()
	}
}

func (g *exprGen) scoreExpr() string {
	switch g.rng.IntN(4) {
	case 0:
		return "scores['credit-card']"
	case 1:
		return "scores['" + g.scoreKey() + "']"
	case 2:
		return "scores.`credit-card`"
	default:
		return "scores." + g.scoreKey()
	}
}

// leaf is a depth-0 expression of type t.
func (g *exprGen) leaf(t string) string {
	for _, v := range g.vars {
		if v.typ == t && g.rng.IntN(2) == 0 {
			return v.name
		}
	}
	switch t {
	case "bool":
		return g.pick("true", "false", "has("+g.answerExpr()+")", "has(scores."+g.scoreKey()+")",
			"has("+g.answerExpr()+"."+g.pick("type", "probability", "choice", "score")+")",
			"'"+g.answerKey()+"' in answers", "'"+g.scoreKey()+"' in scores")
	case "int":
		return g.pick("0", "1", "-1", "2", "7", "-7", "42", "9223372036854775807", "-9223372036854775808",
			"0x1F", "-0x10", "0x7fffffffffffffff", "3", "--3", "-(3)", "100")
	case "uint":
		return g.pick("0u", "1u", "2u", "7u", "18446744073709551615u", "0xFFu", "9223372036854775808u", "3U")
	case "double":
		return g.pick("0.0", "-0.0", "1.5", "0.5", "-2.5", "1e3", "1e300", "-1e-5", ".5", "2.0", "1E2",
			"double('NaN')", "double('inf')", "double('-Inf')", "9.223372036854775807e18", "1.8446744073709552e19",
			g.scoreExpr(), g.answerExpr()+".probability", g.answerExpr()+".score", "0.75", "0.8")
	case "string":
		return g.pick("''", "'other'", `"billing"`, "'héllo'", `"\u00e9"`, `'\x41\101\U0001F600'`, "r'\\d+'",
			`'''tri
ple'''`, `"""a"b"""`, "'a\\tb'", "R\"raw\\n\"", "'topic'", "'0'", "'12'", "'-3'", "'1.5'", "'true'", "'1e3'", "'inf'",
			g.answerExpr()+".choice", g.answerExpr()+".type", "'o'", "'^o'", "'[a-z]+'", "'Ünï ✓'")
	case "answer":
		return g.answerExpr()
	case "map":
		return g.pick("{'a': 1, 'b': 2}", "{}", "{'topic': 'x', 'pii': 0.5}", "{1: 'one', 2u: 'two', true: 'yes'}",
			"{'a': [1, 2], 'b': []}", "answers", "scores", "{'a': 1, 'a': 2}")
	case "dyn":
		return g.pick("null", "[1, 'a', 2.0, 3u, true, null][0]", "{'k': 1.5, 'j': 'x'}['k']", "[2u, 1][0]", "[-0.0, 'z'][0]")
	}
	if strings.HasPrefix(t, "list:") {
		e := strings.TrimPrefix(t, "list:")
		if e == "dyn" {
			return g.pick("[1, 'a', 2.0]", "[null, true, 1u]", "[[1], {'a': 1}]", "[]")
		}
		n := g.rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.leaf(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "true"
}

func (g *exprGen) withVar(t string, f func(name string) string) string {
	g.nvar++
	name := g.pick("x", "y", "v", "k", "e") + fmt.Sprint(g.nvar)
	if g.rng.IntN(10) == 0 && len(g.vars) > 0 {
		name = g.vars[0].name // shadowing
	}
	g.vars = append(g.vars, genVar{name, t})
	defer func() { g.vars = g.vars[:len(g.vars)-1] }()
	return f(name)
}

// rangeExpr is something to iterate over, and the type of its elements (or keys).
func (g *exprGen) rangeExpr(d int) (string, string) {
	switch g.rng.IntN(7) {
	case 0:
		return "answers", "string"
	case 1:
		return "scores", "string"
	case 2:
		return "{'a': 1, 'b': 2, 'c': 3}", "string"
	default:
		et := g.pick("int", "double", "string", "int", "dyn")
		lt := "list:" + et
		if et == "dyn" {
			return g.gen("list:dyn", d), "dyn"
		}
		return g.gen(lt, d), et
	}
}

// listRange is a list to map over, and the type of its elements.
func (g *exprGen) listRange(d int) (string, string) {
	et := g.pick("int", "double", "string", "int", "dyn")
	return g.gen("list:"+et, d), et
}

// gen is an expression of type t of depth at most d.
func (g *exprGen) gen(t string, d int) string {
	if d <= 0 || g.rng.IntN(6) == 0 {
		return g.leaf(t)
	}
	d--
	// Now and then a deliberately mistyped or dynamically typed operand.
	sub := func(st string) string {
		if g.rng.IntN(25) == 0 {
			return g.gen(g.pick("dyn", "int", "string", "double"), d)
		}
		return g.gen(st, d)
	}
	if g.rng.IntN(12) == 0 {
		return "(" + sub(t) + ")"
	}
	switch {
	case t == "bool":
		switch g.rng.IntN(22) {
		case 0:
			return sub("bool") + " && " + sub("bool")
		case 1:
			return sub("bool") + " || " + sub("bool")
		case 2:
			return "!" + g.paren(sub("bool"))
		case 3:
			return sub("bool") + " ? " + sub("bool") + " : " + sub("bool")
		case 4, 5:
			a := g.scalarType()
			b := a
			if isNumType(a) && g.rng.IntN(2) == 0 {
				b = "dyn"
			}
			return g.paren(sub(a)) + g.pick(" == ", " != ") + g.paren(sub(b))
		case 6, 7:
			a := g.pick("int", "uint", "double", "string", "bool", "double")
			b := a
			if isNumType(a) && g.rng.IntN(3) == 0 {
				b = "dyn"
			}
			return g.paren(sub(a)) + g.pick(" < ", " <= ", " > ", " >= ") + g.paren(sub(b))
		case 8:
			e := g.pick("int", "string", "double", "dyn")
			return g.paren(sub(g.pick(e, "dyn", e))) + " in " + g.paren(sub("list:"+e))
		case 9:
			return g.paren(sub(g.pick("string", "dyn"))) + " in " + g.paren(sub("map"))
		case 10:
			return g.paren(sub("string")) + "." + g.pick("contains", "startsWith", "endsWith") + "(" + sub("string") + ")"
		case 11:
			if g.rng.IntN(2) == 0 {
				return "matches(" + sub("string") + ", " + g.pick("'^o'", "'[a-z]+'", "'é'", "'^$'", "'\\\\d'", "'(a|b'") + ")"
			}
			return g.paren(sub("string")) + ".matches(" + g.pick("'o'", "'^[^a]*$'", sub("string")) + ")"
		case 12, 13, 14:
			r, et := g.rangeExpr(d)
			m := g.pick("all", "exists", "exists_one")
			return g.paren(r) + "." + m + "(" + g.withVar(et, func(v string) string { return v + ", " + g.gen("bool", d) }) + ")"
		case 15:
			return g.pick("answers.all(q, answers[q].type == 'answer')", "answers.exists(q, answers[q].choice == 'other')",
				"scores.exists(k, scores[k] > 0.5)", "scores.all(k, scores[k] >= 0.0)", "answers.exists_one(q, has(answers[q].choice))")
		case 16:
			return "bool(" + g.pick("'true'", "'false'", "'t'", "'1'", "'x'", sub("string")) + ")"
		case 17:
			return "has(" + g.pick("{'a': 1}.a", "{'a': 1}.b", g.answerExpr(), g.answerExpr()+"."+g.pick("type", "choice", "score", "probability"),
				"scores."+g.scoreKey(), "[{'a': 1}, 1][0].a") + ")"
		case 18:
			return "[" + sub("bool") + ", 1][0]"
		case 19:
			return g.paren(sub("answer")) + " == " + g.paren(sub("answer"))
		case 20:
			if g.rng.IntN(2) == 0 {
				// map() and filter() over a map: cel-go's order is Go's map order, so only
				// order-insensitive uses are compared.
				r := g.pick("answers", "scores", "{'a': 1, 'b': 2, 'c': 3}", "{1: 'x', 2u: 'y'}")
				kt := "string"
				if strings.HasPrefix(r, "{1") {
					kt = "dyn"
				}
				if g.rng.IntN(2) == 0 {
					return "size(" + r + ".filter(" + g.withVar(kt, func(v string) string { return v + ", " + g.gen("bool", d) }) + ")) " + g.pick("==", "<", ">") + " " + g.pick("0", "1", "2")
				}
				et := g.pick("int", "string", "double")
				return g.paren(sub(et)) + " in " + r + ".map(" + g.withVar(kt, func(v string) string {
					if g.rng.IntN(3) == 0 {
						return v + ", " + g.gen("bool", d) + ", " + g.gen(et, d)
					}
					return v + ", " + g.gen(et, d)
				}) + ")"
			}
			return g.paren(sub("list:"+g.pick("int", "dyn"))) + g.pick(" == ", " != ") + g.paren(sub("list:"+g.pick("int", "double", "dyn")))
		default:
			return g.paren(sub("map")) + " == " + g.paren(sub("map"))
		}
	case isNumType(t):
		switch g.rng.IntN(9) {
		case 0, 1, 2:
			op := g.pick(" + ", " - ", " * ", " / ", " % ")
			if t == "double" && op == " % " {
				op = " / "
			}
			return g.paren(sub(t)) + op + g.paren(sub(t))
		case 3:
			if t == "uint" {
				return t + "(" + sub(g.pick("int", "double", "string")) + ")"
			}
			return "-" + g.paren(sub(t))
		case 4, 5:
			return t + "(" + sub(g.pick("int", "uint", "double", "string", "dyn", t)) + ")"
		case 6:
			return sub("bool") + " ? " + sub(t) + " : " + sub(t)
		case 7:
			if t == "int" {
				x := sub(g.pick("string", "list:int", "map", "list:dyn"))
				if g.rng.IntN(2) == 0 {
					return "size(" + x + ")"
				}
				return g.paren(x) + ".size()"
			}
			return g.paren(sub("list:"+t)) + "[" + sub("int") + "]"
		default:
			if t == "double" {
				return g.scoreExpr()
			}
			return "[" + sub(t) + ", 'x'][0]"
		}
	case t == "string":
		switch g.rng.IntN(5) {
		case 0, 1:
			return g.paren(sub("string")) + " + " + g.paren(sub("string"))
		case 2:
			return "string(" + sub(g.pick("int", "uint", "double", "bool", "string", "dyn")) + ")"
		case 3:
			return sub("bool") + " ? " + sub("string") + " : " + sub("string")
		default:
			return g.paren(sub("list:string")) + "[" + sub("int") + "]"
		}
	case t == "answer":
		return g.answerExpr()
	case t == "map":
		switch g.rng.IntN(3) {
		case 0:
			return "{" + g.pick("'a'", "'b'", "1", "2u", "true") + ": " + sub(g.scalarType()) + ", 'z': " + sub(g.scalarType()) + "}"
		default:
			return g.leaf("map")
		}
	case t == "dyn":
		switch g.rng.IntN(3) {
		case 0:
			return "[" + sub(g.scalarType()) + ", " + sub(g.scalarType()) + "][" + g.pick("0", "1", "0u", "1.0", "2") + "]"
		case 1:
			return "{'p': " + sub(g.scalarType()) + ", 'q': " + sub(g.scalarType()) + "}." + g.pick("p", "q", "r")
		default:
			return g.leaf("dyn")
		}
	case strings.HasPrefix(t, "list:"):
		et := strings.TrimPrefix(t, "list:")
		switch g.rng.IntN(6) {
		case 0:
			return g.paren(sub(t)) + " + " + g.paren(sub(t))
		case 1:
			r, rt := g.listRange(d)
			return g.paren(r) + ".map(" + g.withVar(rt, func(v string) string {
				if g.rng.IntN(3) == 0 {
					return v + ", " + g.gen("bool", d) + ", " + g.gen(et, d)
				}
				return v + ", " + g.gen(et, d)
			}) + ")"
		case 2:
			return g.paren(sub(t)) + ".filter(" + g.withVar(et, func(v string) string { return v + ", " + g.gen("bool", d) }) + ")"
		case 3:
			n := 1 + g.rng.IntN(3)
			parts := make([]string, n)
			for i := range parts {
				parts[i] = sub(et)
			}
			return "[" + strings.Join(parts, ", ") + "]"
		default:
			return g.leaf(t)
		}
	}
	return g.leaf(t)
}

func (g *exprGen) paren(s string) string {
	return "(" + s + ")"
}

func isNumType(t string) bool { return t == "int" || t == "uint" || t == "double" }
