package policytest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/classify"
	"github.com/guardrail-dev/guardrail-operator/runtime/content"
	"github.com/guardrail-dev/guardrail-operator/runtime/engine"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
	"github.com/guardrail-dev/guardrail-operator/runtime/policy/labels"
	"github.com/guardrail-dev/guardrail-operator/runtime/wire"
)

// runTimeout bounds one run: built-in classifiers and stubs answer at once, so only a
// defect could reach it.
const runTimeout = time.Minute

// Runner runs cases against compiled policies.
type Runner struct {
	Policies *Policies
	builtins map[string]classify.Classifier
}

// NewRunner builds the built-in classifiers of p once for every case.
func NewRunner(p *Policies) (*Runner, error) {
	r := &Runner{Policies: p, builtins: map[string]classify.Classifier{}}
	for _, c := range p.Snapshot.Classifiers {
		if c.Backend != policy.BackendBuiltin {
			continue
		}
		b, err := newBuiltin(c)
		if err != nil {
			return nil, fmt.Errorf("classifier %s: %w", c.Key, err)
		}
		r.builtins[c.Key] = b
	}
	return r, nil
}

// Result is the result of one run of a case.
type Result struct {
	File string `json:"file,omitempty"`
	Case string `json:"case"`
	// Run says how the case ran: "not streamed", "streamed, 4-character deltas", or
	// "request" for a case with a request only.
	Run string `json:"run"`
	// Status is passed, failed or error.
	Status string `json:"status"`
	// Error says why the case could not run (Status error).
	Error string `json:"error,omitempty"`
	// Guardrails are the keys of the guardrails that applied.
	Guardrails []string   `json:"guardrails"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
}

// Statuses of a Result.
const (
	StatusPassed = "passed"
	StatusFailed = "failed"
	StatusError  = "error"
)

// Mismatch is one expectation a run did not meet.
type Mismatch struct {
	Field string `json:"field"`
	Want  string `json:"want"`
	Got   string `json:"got"`
}

// RunFile runs every case of f.
func (r *Runner) RunFile(ctx context.Context, f *File) []Result {
	var out []Result
	for i := range f.Cases {
		out = append(out, r.runCase(ctx, f, &f.Cases[i])...)
	}
	return out
}

// prepared is a case ready to run.
type prepared struct {
	c      *Case
	ns     string
	keys   []string
	eng    *engine.Engine
	stubs  []*stub
	family wire.Family
}

func (r *Runner) runCase(ctx context.Context, f *File, c *Case) []Result {
	runs := runsOf(c)
	p, err := r.prepare(f, c)
	if err != nil {
		out := make([]Result, len(runs))
		for i, d := range runs {
			out[i] = Result{File: f.path, Case: c.Name, Run: runName(c, d), Status: StatusError, Error: err.Error(), Guardrails: []string{}}
		}
		return out
	}
	out := make([]Result, 0, len(runs))
	for _, d := range runs {
		res := Result{File: f.path, Case: c.Name, Run: runName(c, d), Guardrails: p.keys}
		obs, err := p.run(ctx, d)
		switch {
		case err != nil:
			res.Status, res.Error = StatusError, err.Error()
		default:
			res.Mismatches = compare(p, obs)
			res.Status = StatusPassed
			if len(res.Mismatches) > 0 {
				res.Status = StatusFailed
			}
		}
		out = append(out, res)
	}
	return out
}

// runsOf lists a case's runs by delta size; 0 is the run not streamed.
func runsOf(c *Case) []int {
	if c.Answer == nil {
		return []int{0}
	}
	var runs []int
	if !c.Answer.StreamOnly {
		runs = append(runs, 0)
	}
	return append(runs, c.Answer.Deltas...)
}

func runName(c *Case, deltas int) string {
	switch {
	case c.Answer == nil:
		return "request"
	case deltas == 0:
		return "not streamed"
	case deltas == 1:
		return "streamed, 1-character deltas"
	}
	return fmt.Sprintf("streamed, %d-character deltas", deltas)
}

// prepare selects the guardrails of the case's pod and builds their backends.
func (r *Runner) prepare(f *File, c *Case) (*prepared, error) {
	pod := c.Pod
	if pod == nil {
		pod = f.Pod
	}
	if pod == nil {
		pod = &Pod{}
	}
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	snap := r.Policies.Snapshot
	var selected []*policy.Guardrail
	for _, g := range snap.Guardrails {
		if g.Namespace != ns {
			continue
		}
		if g.Selector != nil {
			sel, err := labels.SelectorFrom(g.Selector)
			if err != nil || !sel.Matches(pod.Labels) {
				continue
			}
		}
		selected = append(selected, g)
	}
	if len(c.Guardrails) > 0 {
		var kept []*policy.Guardrail
		for i, name := range c.Guardrails {
			g := findGuardrail(selected, ns, name)
			if g == nil {
				if findGuardrail(snap.Guardrails, ns, name) == nil {
					return nil, fmt.Errorf("guardrails[%d]: no Guardrail %s in namespace %s in the policies", i, name, ns)
				}
				return nil, fmt.Errorf("guardrails[%d]: Guardrail %s does not select the pod (namespace %s, labels %s)", i, name, ns, labelString(pod.Labels))
			}
			kept = append(kept, g)
		}
		selected = kept
	}
	p := &prepared{c: c, ns: ns, keys: []string{}}
	backends := map[string]classify.Classifier{}
	for _, g := range selected {
		p.keys = append(p.keys, g.Key)
		if backends[g.Classifier] != nil {
			continue
		}
		cl := snap.Classifier(g.Classifier)
		if b := r.builtins[g.Classifier]; b != nil {
			backends[g.Classifier] = b
			continue
		}
		s, where := stubFor(f, c, cl)
		if s == nil {
			return nil, fmt.Errorf("the Guardrail %s uses the remote classifier %s: give its verdict under classifiers.%s (of the case or of the file); kubectl guardrail test calls no network", g.Name, cl.Key, cl.Name)
		}
		st, err := newStub(cl, s, where)
		if err != nil {
			return nil, err
		}
		backends[g.Classifier] = st
		p.stubs = append(p.stubs, st)
	}
	if c.Request != nil && c.Request.Body != "" {
		p.family = families[c.Request.Family]
	}
	p.eng = engine.New(engine.Config{Guardrails: selected, Classifiers: snap.Classifiers, Backends: engine.BackendMap(backends)})
	return p, nil
}

// stubFor finds the verdict of classifier cl, the case's before the file's, by name or
// namespace/name; where is its field path for errors.
func stubFor(f *File, c *Case, cl *policy.Classifier) (Stub, string) {
	for _, src := range []struct {
		m      map[string]Stub
		prefix string
	}{{c.Classifiers, "case " + c.Name + ": classifiers."}, {f.Classifiers, "classifiers."}} {
		for _, k := range []string{cl.Key, cl.Name} {
			if s, ok := src.m[k]; ok {
				return s, src.prefix + k
			}
		}
	}
	return nil, ""
}

func findGuardrail(gs []*policy.Guardrail, ns, name string) *policy.Guardrail {
	for _, g := range gs {
		if g.Key == name || g.Namespace == ns && g.Name == name {
			return g
		}
	}
	return nil
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// observed is what a run did.
type observed struct {
	verdict *engine.Verdict
	// upstream is nil when the request was refused.
	upstream  []string
	answer    string
	toolCalls []ToolCall
	// decisions are the outcomes of each guardrail's records, by key.
	decisions map[string][]string
	// enforced is the strongest action an Enforce guardrail took: an outcome.
	enforced string
	warnings []string
}

// enforcedRank orders the outcomes of Enforce guardrails that pass content.
var enforcedRank = map[guardv1.Outcome]int{
	guardv1.OutcomeWarned: 1, guardv1.OutcomePseudonymized: 2, guardv1.OutcomeRedacted: 3, guardv1.OutcomeStripped: 4,
}

func (o *observed) outcome() string {
	switch {
	case o.verdict != nil && o.verdict.Kind == engine.Blocked:
		return "blocked"
	case o.verdict != nil:
		return "failed"
	case o.enforced != "":
		return o.enforced
	}
	return "allowed"
}

// run runs the case once: not streamed (deltas 0) or streamed at deltas characters.
func (p *prepared) run(ctx context.Context, deltas int) (*observed, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	for _, s := range p.stubs {
		s.missed.Store(false)
	}
	obs := &observed{decisions: map[string][]string{}}
	s := p.eng.NewSession(engine.Options{Record: func(rec engine.Record) {
		obs.decisions[rec.Guardrail] = append(obs.decisions[rec.Guardrail], string(rec.Outcome))
		if rec.Mode == policy.ModeEnforce && enforcedRank[rec.Outcome] > enforcedRank[guardv1.Outcome(obs.enforced)] {
			obs.enforced = string(rec.Outcome)
		}
	}})
	defer s.End()
	err := p.drive(ctx, s, obs, deltas)
	for _, st := range p.stubs {
		if st.missed.Load() {
			return nil, fmt.Errorf("no verdict of classifier %s applies to a text it judged: add one without whenContains", st.key)
		}
	}
	if err != nil {
		return nil, err
	}
	obs.warnings = s.Warnings()
	return obs, nil
}

func (p *prepared) drive(ctx context.Context, s *engine.Session, obs *observed, deltas int) error {
	if req := p.c.Request; req != nil {
		msgs, err := p.requestMessages()
		if err != nil {
			return err
		}
		res, err := s.Input(ctx, msgs)
		if err != nil {
			return err
		}
		if res.Stop != nil {
			obs.verdict = res.Stop
			return nil
		}
		obs.upstream = upstreamTexts(res.Messages)
	}
	a := p.c.Answer
	if a == nil {
		return nil
	}
	if deltas == 0 {
		return answerWhole(ctx, s, a, obs)
	}
	return answerStreamed(ctx, s, a, deltas, obs)
}

// requestMessages gives the engine the request's messages, as the guard's proxy does
// (runtime/proxy/convert.go): a raw body is read by the wire layer of its family.
func (p *prepared) requestMessages() ([]engine.Message, error) {
	req := p.c.Request
	if p.family == 0 {
		out := make([]engine.Message, len(req.Messages))
		for i, m := range req.Messages {
			out[i] = engine.Message{Role: m.Role, Parts: []engine.Part{{Modality: classify.Text, Text: m.Content, ToolResult: m.Role == "tool"}}}
		}
		return out, nil
	}
	wr, err := wire.ParseRequest(p.family, []byte(req.Body))
	if err != nil {
		return nil, fmt.Errorf("request.body: the guard refuses it as a %s request: %w", req.Family, err)
	}
	out := make([]engine.Message, len(wr.Messages))
	for i, m := range wr.Messages {
		parts := make([]engine.Part, len(m.Parts))
		for j := range m.Parts {
			wp := &m.Parts[j]
			if wp.Modality == classify.Text {
				parts[j] = engine.Part{Modality: classify.Text, Text: wp.Text}
			} else {
				parts[j] = engine.Part{Modality: wp.Modality, Media: wp.Media()}
			}
			parts[j].ToolResult = wp.ToolCallID != ""
		}
		out[i] = engine.Message{Role: m.Role, Parts: parts}
	}
	return out, nil
}

// upstreamTexts is the text of each message the provider receives.
func upstreamTexts(msgs []engine.Message) []string {
	out := []string{}
	for _, m := range msgs {
		if m.Dropped {
			continue
		}
		var texts []string
		for _, part := range m.Parts {
			if !part.Dropped && part.Modality == classify.Text {
				texts = append(texts, part.Text)
			}
		}
		out = append(out, strings.Join(texts, "\n"))
	}
	return out
}

var textChannel = content.Channel{Kind: content.Text}

func toolChannel(i int) content.Channel { return content.Channel{Kind: content.ToolCall, Index: i} }

func answerWhole(ctx context.Context, s *engine.Session, a *Answer, obs *observed) error {
	var contents []engine.Content
	if a.Text != "" {
		contents = append(contents, engine.Content{Channel: textChannel, Text: a.Text})
	}
	for i, tc := range a.ToolCalls {
		contents = append(contents, engine.Content{Channel: toolChannel(i), Text: tc.Arguments, Name: tc.Name})
	}
	res, err := s.Output(ctx, contents)
	if err != nil {
		return err
	}
	obs.verdict = res.Stop
	for _, c := range res.Contents {
		switch {
		case c.Dropped:
		case c.Channel.Kind == content.ToolCall && res.Stop == nil:
			obs.toolCalls = append(obs.toolCalls, ToolCall{Name: c.Name, Arguments: c.Text})
		case c.Channel.Kind == content.Text:
			obs.answer = c.Text
		}
	}
	return nil
}

func answerStreamed(ctx context.Context, s *engine.Session, a *Answer, deltas int, obs *observed) error {
	calls := map[int]*strings.Builder{}
	take := func(st engine.Step, err error) (bool, error) {
		if err != nil {
			return true, err
		}
		for _, ch := range st.Release {
			switch ch.Channel.Kind {
			case content.ToolCall:
				if calls[ch.Channel.Index] == nil {
					calls[ch.Channel.Index] = &strings.Builder{}
				}
				_, _ = calls[ch.Channel.Index].Write(ch.Text)
			case content.Text:
				obs.answer += string(ch.Text)
			}
		}
		obs.verdict = st.Stop
		return st.Stop != nil, nil
	}
	stream := func(ch content.Channel, text string) (bool, error) {
		for _, d := range split(text, deltas) {
			if stop, err := take(s.Delta(ctx, ch, d)); stop {
				return true, err
			}
		}
		return false, nil
	}
	if a.Text != "" {
		if stop, err := stream(textChannel, a.Text); stop {
			return err
		}
		if stop, err := take(s.EndChannel(ctx, textChannel)); stop {
			return err
		}
	}
	for i, tc := range a.ToolCalls {
		if stop, err := stream(toolChannel(i), tc.Arguments); stop {
			return err
		}
		if stop, err := take(s.EndToolCall(ctx, toolChannel(i), tc.Name)); stop {
			return err
		}
	}
	if stop, err := take(s.Finish(ctx)); stop {
		return err
	}
	for i, tc := range a.ToolCalls {
		if b := calls[i]; b != nil {
			obs.toolCalls = append(obs.toolCalls, ToolCall{Name: tc.Name, Arguments: b.String()})
		}
	}
	return nil
}

// split cuts text into deltas of n characters (code points), as a provider streams it.
func split(text string, n int) []string {
	var out []string
	r := []rune(text)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
