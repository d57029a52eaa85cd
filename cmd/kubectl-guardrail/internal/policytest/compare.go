package policytest

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// compare lists the expectations of the case that the run did not meet.
func compare(p *prepared, o *observed) []Mismatch {
	e := &p.c.Expect
	var out []Mismatch
	add := func(field, want, got string) { out = append(out, Mismatch{Field: field, Want: want, Got: got}) }
	if got := o.outcome(); got != e.Outcome {
		add("outcome", e.Outcome, got+stopSummary(p, o))
	}
	if v := o.verdict; v != nil {
		if e.Reason != "" && !strings.Contains(v.Reason, e.Reason) {
			add("reason", "contains "+strconv.Quote(e.Reason), strconv.Quote(v.Reason))
		}
		if e.Guardrail != "" && !p.sameGuardrail(e.Guardrail, v.Guardrail) {
			add("guardrail", e.Guardrail, p.short(v.Guardrail))
		}
		if e.Phase != "" && e.Phase != v.Phase.String() {
			add("phase", e.Phase, v.Phase.String())
		}
		if e.Code != "" && e.Code != string(v.Code) {
			add("code", e.Code, string(v.Code))
		}
	}
	if e.Upstream != nil {
		switch {
		case o.upstream == nil:
			add("upstream", quoteList(e.Upstream), "nothing: the request was refused")
		case !slices.Equal(e.Upstream, o.upstream):
			add("upstream", quoteList(e.Upstream), quoteList(o.upstream))
		}
	}
	if e.Answer != nil && *e.Answer != o.answer {
		add("answer", strconv.Quote(*e.Answer), strconv.Quote(o.answer))
	}
	if e.ToolCalls != nil && !slices.Equal(e.ToolCalls, o.toolCalls) {
		add("toolCalls", callList(e.ToolCalls), callList(o.toolCalls))
	}
	released := o.answer
	for _, tc := range o.toolCalls {
		released += "\n" + tc.Arguments
	}
	for i, never := range e.NeverReleased {
		if part := leaked(never, released); part != "" {
			add(fmt.Sprintf("neverReleased[%d]", i), "no part of "+strconv.Quote(never)+" reaches the client",
				strconv.Quote(part)+" did, in "+strconv.Quote(released))
		}
	}
	for _, g := range sortedKeys(e.Decisions) {
		want := e.Decisions[g]
		key := p.key(g)
		got := o.decisions[key]
		if !decisionMatches(want, got) {
			add("decisions."+g, want, decisionSummary(got))
		}
	}
	if e.Warnings != nil {
		got := make([]string, len(o.warnings))
		for i, w := range o.warnings {
			got[i] = p.short(w)
		}
		want := slices.Clone(e.Warnings)
		for i := range want {
			want[i] = p.short(p.key(want[i]))
		}
		sort.Strings(want)
		if !slices.Equal(want, got) {
			add("warnings", quoteList(want), quoteList(got))
		}
	}
	return out
}

// stopSummary says who stopped the content, to go with an unexpected outcome.
func stopSummary(p *prepared, o *observed) string {
	v := o.verdict
	if v == nil {
		return ""
	}
	if v.Code != "" {
		return fmt.Sprintf(" (by %s at %s, %s)", p.short(v.Guardrail), v.Phase, v.Code)
	}
	return fmt.Sprintf(" (by %s at %s: %q)", p.short(v.Guardrail), v.Phase, v.Reason)
}

// key turns a guardrail name of the case into its key in the pod's namespace.
func (p *prepared) key(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return p.ns + "/" + name
}

// short is the name of a guardrail of the pod's namespace, or its key.
func (p *prepared) short(key string) string {
	if name, ok := strings.CutPrefix(key, p.ns+"/"); ok {
		return name
	}
	return key
}

func (p *prepared) sameGuardrail(want, key string) bool { return p.key(want) == key }

func decisionMatches(want string, got []string) bool {
	switch want {
	case "notEvaluated":
		return len(got) == 0
	case "allowed":
		for _, o := range got {
			if o != "allowed" {
				return false
			}
		}
		return true
	}
	return slices.Contains(got, want)
}

// decisionSummary spells a guardrail's record outcomes: the distinct ones but allowed,
// "allowed", or "notEvaluated".
func decisionSummary(got []string) string {
	if len(got) == 0 {
		return "notEvaluated"
	}
	var distinct []string
	for _, o := range got {
		if o != "allowed" && !slices.Contains(distinct, o) {
			distinct = append(distinct, o)
		}
	}
	if len(distinct) == 0 {
		return "allowed"
	}
	return strings.Join(distinct, ", ")
}

// leaked returns a part of never that appears in released: the whole of it, or any run
// of at least half its characters (at least 4), which is what a stream stopped or
// redacted too late shows. "" when none does.
func leaked(never, released string) string {
	r := []rune(never)
	n := max((len(r)+1)/2, min(4, len(r)))
	if strings.Contains(released, never) {
		return never
	}
	for i := 0; i+n <= len(r); i++ {
		if part := string(r[i : i+n]); strings.Contains(released, part) {
			return part
		}
	}
	return ""
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func callList(l []ToolCall) string {
	q := make([]string, len(l))
	for i, c := range l {
		q[i] = c.Name + "(" + c.Arguments + ")"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
