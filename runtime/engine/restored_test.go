package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy"
)

// A tenant's Pseudonymize masks addresses for the provider and restores them in the
// answer. A ClusterGuardrail that keeps addresses out of answers judges the answer as
// the client receives it too, restored: the tenant tier cannot restore what the cluster
// tier blocks or redacts.

// mailWorld is pseudoWorld (a tenant Pseudonymize of jo and ann on Input and ToolResults)
// with a ClusterGuardrail "/no-mail-out" taking action on the same addresses, found by a
// cluster detector, at the Output phase unless opts say otherwise.
func mailWorld(action policy.Action, opts ...guardrailOption) *world {
	w := pseudoWorld()
	clusterGuardrailOn(w, "no-mail-out", action, opts...)
	return w
}

// clusterGuardrailOn adds a ClusterGuardrail on a cluster detector of jo and ann.
func clusterGuardrailOn(w *world, name string, action policy.Action, opts ...guardrailOption) *policy.Guardrail {
	f, cats := lexicon("email", jo, "email", ann)
	c := w.classifier("cluster-"+name, f, withCategories(cats...), withSpans(30))
	w.backends["/"+name] = w.backends[c.Key]
	delete(w.backends, c.Key)
	c.Key, c.Namespace = "/"+name, ""
	opts = append([]guardrailOption{threshold(1, action, nil), phases(policy.PhaseOutput)}, opts...)
	g := w.guardrail(name, c, opts...)
	g.Key, g.Namespace, g.Cluster, g.Reason = "/"+name, "", true, "No addresses in answers."
	return g
}

// masked runs the Input phase of a prompt naming jo and checks what the provider receives.
func masked(t *testing.T, s *Session) {
	t.Helper()
	res, err := s.Input(context.Background(), []Message{user("Write to " + jo + " please.")})
	if err != nil || res.Stop != nil {
		t.Fatalf("Input: %v %+v", err, res.Stop)
	}
	if got := sentTexts(res)[0]; got != "Write to <EMAIL_1> please." {
		t.Fatalf("sent %q", got)
	}
}

// pendingStream makes a guardrail judge streams too, holding back pending matches.
var pendingStream = streaming(policy.Streaming{HoldBack: policy.HoldBackPending})

func TestAClusterGuardrailJudgesWhatATenantsPseudonymizeRestores(t *testing.T) {
	ctx := context.Background()
	answer := []Content{{Channel: text0, Text: "Done: mailed <EMAIL_1>."}}

	t.Run("non-streamed: a cluster Block on addresses blocks the restored answer", func(t *testing.T) {
		s, rec := mailWorld(policy.ActionBlock).session()
		masked(t, s)
		out, err := s.Output(ctx, slices.Clone(answer))
		if err != nil || out.Stop == nil || out.Stop.Kind != Blocked || out.Stop.Guardrail != "/no-mail-out" {
			t.Fatalf("verdict %+v (%v), want the ClusterGuardrail's block", out.Stop, err)
		}
		if strings.Contains(released(out), jo) {
			t.Fatalf("the address was released: %q", released(out))
		}
		if !slices.ContainsFunc(rec.records, func(r Record) bool {
			return r.Guardrail == "/no-mail-out" && r.Phase == policy.PhaseOutput && r.Outcome == guardv1.OutcomeBlocked
		}) {
			t.Errorf("no blocked record of the ClusterGuardrail: %+v", rec.records)
		}
	})
	t.Run("non-streamed: a cluster Redact redacts the restored value", func(t *testing.T) {
		s, _ := mailWorld(policy.ActionRedact).session()
		masked(t, s)
		out, err := s.Output(ctx, slices.Clone(answer))
		if err != nil || out.Stop != nil {
			t.Fatalf("verdict %+v (%v)", out.Stop, err)
		}
		if got := out.Contents[0].Text; got != "Done: mailed [REDACTED:email]." {
			t.Fatalf("answer %q", got)
		}
	})
	t.Run("non-streamed: a tool call carrying a restored value is blocked by a cluster Redact", func(t *testing.T) {
		s, _ := mailWorld(policy.ActionRedact).session()
		masked(t, s)
		out, err := s.Output(ctx, []Content{{Channel: call0(0), Name: "send_mail", Text: `{"to":"<EMAIL_1>"}`}})
		if err != nil || out.Stop == nil || out.Stop.Guardrail != "/no-mail-out" {
			t.Fatalf("verdict %+v (%v), want the ClusterGuardrail's block", out.Stop, err)
		}
	})
	t.Run("non-streamed: a cluster Strip of restored reasoning drops it", func(t *testing.T) {
		s, _ := mailWorld(policy.ActionStrip).session()
		masked(t, s)
		out, err := s.Output(ctx, []Content{{Channel: reasoning0, Text: "They want <EMAIL_1> mailed."}, {Channel: text0, Text: "Done."}})
		if err != nil || out.Stop != nil {
			t.Fatalf("verdict %+v (%v)", out.Stop, err)
		}
		if !out.Contents[0].Dropped || out.Contents[1].Text != "Done." {
			t.Fatalf("contents %+v", out.Contents)
		}
	})
	t.Run("non-streamed: a cluster guardrail in Report mode records and changes nothing", func(t *testing.T) {
		s, rec := mailWorld(policy.ActionBlock, reportMode()).session()
		masked(t, s)
		out, err := s.Output(ctx, slices.Clone(answer))
		if err != nil || out.Stop != nil || out.Contents[0].Text != "Done: mailed "+jo+"." {
			t.Fatalf("verdict %+v (%v), answer %+v", out.Stop, err, out.Contents)
		}
		if !slices.ContainsFunc(rec.records, func(r Record) bool {
			return r.Guardrail == "/no-mail-out" && r.Outcome == guardv1.OutcomeWouldBlock
		}) {
			t.Errorf("no wouldBlock record: %+v", rec.records)
		}
	})
	t.Run("non-streamed: the tenant tier alone restores as before", func(t *testing.T) {
		s, _ := pseudoWorld().session()
		masked(t, s)
		out, err := s.Output(ctx, slices.Clone(answer))
		if err != nil || out.Stop != nil || out.Contents[0].Text != "Done: mailed "+jo+"." {
			t.Fatalf("verdict %+v (%v), answer %+v", out.Stop, err, out.Contents)
		}
	})
	t.Run("a ClusterGuardrail's own Pseudonymize is restored as before", func(t *testing.T) {
		w := pseudoWorld()
		mask := w.guardrails[0]
		mask.Key, mask.Namespace, mask.Cluster = "/mask", "", true
		clusterGuardrailOn(w, "no-mail-out", policy.ActionBlock)
		s, _ := w.session()
		masked(t, s)
		out, err := s.Output(ctx, slices.Clone(answer))
		if err != nil || out.Stop != nil || out.Contents[0].Text != "Done: mailed "+jo+"." {
			t.Fatalf("verdict %+v (%v), answer %+v", out.Stop, err, out.Contents)
		}
	})

	t.Run("streamed: a cluster Block on Stream blocks before the value is released", func(t *testing.T) {
		for _, size := range []int{1, 2, 3, 5, 40} {
			s, _ := mailWorld(policy.ActionBlock, pendingStream).session()
			masked(t, s)
			got, v := stream(t, s, text0, "Done: mailed <EMAIL_1>. Anything else?", size)
			if v == nil || v.Guardrail != "/no-mail-out" || strings.Contains(got, jo) || strings.Contains(got, "EMAIL") {
				t.Fatalf("deltas of %d: released %q, verdict %+v", size, got, v)
			}
		}
	})
	t.Run("streamed: a cluster Redact on Stream releases the marker", func(t *testing.T) {
		for _, size := range []int{1, 2, 3, 5, 40} {
			s, _ := mailWorld(policy.ActionRedact, pendingStream).session()
			masked(t, s)
			got, v := stream(t, s, text0, "Done: mailed <EMAIL_1>. Anything else?", size)
			if v != nil || got != "Done: mailed [REDACTED:email]. Anything else?" {
				t.Fatalf("deltas of %d: released %q, verdict %+v", size, got, v)
			}
		}
	})
	t.Run("streamed: a cluster Block on Output alone blocks at the channel's end", func(t *testing.T) {
		s, _ := mailWorld(policy.ActionBlock).session()
		masked(t, s)
		// Output judges a streamed channel at its end, after it was sent (hold-back is the
		// Stream phase's): the block ends the stream, as it would on an address the model
		// wrote itself.
		if _, v := stream(t, s, text0, "Done: mailed <EMAIL_1>.", 4); v == nil || v.Guardrail != "/no-mail-out" {
			t.Fatalf("verdict %+v, want the ClusterGuardrail's block", v)
		}
	})
	t.Run("streamed: a tool call carrying a restored value is blocked", func(t *testing.T) {
		for _, opts := range [][]guardrailOption{nil, {pendingStream}, {pendingStream, phases(policy.PhaseStream)}} {
			s, _ := mailWorld(policy.ActionRedact, opts...).session()
			masked(t, s)
			var calls []string
			step, err := s.Delta(ctx, call0(0), `{"to":"<EMAIL_1>"}`)
			if err == nil && step.Stop == nil {
				step, err = s.EndToolCall(ctx, call0(0), "send_mail")
			}
			if err == nil && step.Stop == nil {
				step, err = s.Finish(ctx)
				for _, c := range step.Release {
					calls = append(calls, string(c.Text))
				}
			}
			if err != nil || step.Stop == nil || step.Stop.Guardrail != "/no-mail-out" || len(calls) > 0 {
				t.Fatalf("verdict %+v (%v), released %q", step.Stop, err, calls)
			}
		}
	})
	t.Run("streamed: the object channel's restored snapshot is redacted", func(t *testing.T) {
		s, _ := mailWorld(policy.ActionRedact, pendingStream).session()
		masked(t, s)
		step, err := s.Snapshot(ctx, object0, `{"to":"<EMAIL_1>"}`)
		if err != nil || step.Stop != nil || len(step.Release) != 1 || string(step.Release[0].Text) != `{"to":"[REDACTED:email]"}` {
			t.Fatalf("%+v (%v)", step, err)
		}
		step, err = s.EndChannel(ctx, object0)
		for _, c := range step.Release {
			if strings.Contains(string(c.Text), jo) {
				t.Fatalf("released %q", c.Text)
			}
		}
		if err != nil || step.Stop != nil {
			t.Fatalf("%+v (%v)", step, err)
		}
	})
	t.Run("streamed: the tenant tier alone restores as before", func(t *testing.T) {
		s, _ := pseudoWorld().session()
		masked(t, s)
		if got, v := stream(t, s, text0, "Done: mailed <EMAIL_1>.", 3); v != nil || got != "Done: mailed "+jo+"." {
			t.Fatalf("released %q, verdict %+v", got, v)
		}
	})
	t.Run("streamed: a value the cluster tier lets through is restored", func(t *testing.T) {
		s, _ := mailWorld(policy.ActionBlock, pendingStream).session()
		masked(t, s)
		if got, v := stream(t, s, text0, "Done: mailed <EMAIL_2> only.", 3); v != nil || got != "Done: mailed <EMAIL_2> only." {
			t.Fatalf("released %q, verdict %+v", got, v)
		}
	})
}

// The evaluations of restored text see it as the client does: each value in place of its
// placeholder, what the cluster tier redacted itself as its marker, a ClusterGuardrail's
// own placeholders as they are.
func TestRestoredTextAsTheClusterTierIsSentIt(t *testing.T) {
	w := pseudoWorld()
	g := clusterGuardrailOn(w, "watch", policy.ActionWarn)
	judge := w.backends[g.Classifier].(*fake)
	s, _ := w.session()
	masked(t, s)
	out, err := s.Output(context.Background(), []Content{{Channel: text0, Text: "To <EMAIL_1>, not <EMAIL_9>."}})
	if err != nil || out.Stop != nil {
		t.Fatal(err, out.Stop)
	}
	if got := judge.texts(); !slices.Equal(got, []string{"To <EMAIL_1>, not <EMAIL_9>.", "To " + jo + ", not <EMAIL_9>."}) {
		t.Fatalf("the cluster judge was sent %q", got)
	}
	if s.Warnings()[0] != "/watch" {
		t.Errorf("warnings %v", s.Warnings())
	}
}

// A model that echoes its prompt hands every value it received back; with a tenant's
// Pseudonymize it hands back placeholders, which are restored. Whatever the tenant's
// guardrails, a value that an enforcing ClusterGuardrail blocks, strips or redacts in
// answers (at the Output phase, and in a stream at the Stream phase, which acts before
// text is released) does not reach the client, streamed or not — unless a ClusterGuardrail
// pseudonymized it itself: the cluster tier restores its own masking as before.
func TestTenantPseudonymizeNeverRestoresWhatClusterGuardrailsKeepFromTheClient(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 36))
		ps := drawPolicies(r)
		if !slices.ContainsFunc(ps.tenant, pseudonymizes) {
			ps.tenant = append(ps.tenant, []guardrailOption{threshold(0.5, policy.ActionPseudonymize, nil), phases(policy.PhaseInput)})
			ps.tenantBroken = append(ps.tenantBroken, false)
		}
		streamed := r.IntN(2) == 0
		answers := policy.PhaseOutput
		if streamed {
			answers = policy.PhaseStream
		}
		for i, opts := range ps.cluster {
			if pseudonymizes(opts) {
				continue
			}
			if r.IntN(2) == 0 {
				// Answers only: the values reach the tenant's Pseudonymize unjudged.
				opts = append(slices.Clone(opts), phases(policy.PhaseOutput))
			}
			if streamed {
				opts = append(slices.Clone(opts), streaming(policy.Streaming{HoldBack: policy.HoldBackPending}))
			}
			ps.cluster[i] = opts
		}
		e := ps.build(true, false)
		protected, own := map[string]bool{}, map[string]bool{}
		for _, gd := range e.guards {
			g := gd.g
			if !g.Cluster || g.Mode != policy.ModeEnforce {
				continue
			}
			for _, c := range g.Categories {
				switch {
				case g.Action == policy.ActionPseudonymize:
					own[entities[c.Index]] = true
				case g.Phases.Has(answers) && (g.Action == policy.ActionBlock || g.Action == policy.ActionStrip || g.Action == policy.ActionRedact):
					protected[entities[c.Index]] = true
				}
			}
		}
		text := randomText(r) + " " + randomText(r)
		sizes := []int{1 + r.IntN(8), 1 + r.IntN(8)}
		s := e.NewSession(Options{})
		in, err := s.Input(context.Background(), []Message{user(text)})
		if err != nil {
			t.Fatalf("seed %d: Input: %v", seed, err)
		}
		if in.Stop != nil {
			s.End()
			continue
		}
		prompt := strings.TrimSuffix(forwarded(in), "\n")
		var got string
		if streamed {
			got, _ = stream(t, s, text0, prompt, sizes...)
		} else {
			out, err := s.Output(context.Background(), []Content{{Channel: text0, Text: prompt}})
			if err != nil {
				t.Fatalf("seed %d: Output: %v", seed, err)
			}
			got = released(out)
		}
		s.End()
		for v := range protected {
			if !own[v] && strings.Contains(got, v) {
				t.Fatalf("seed %d (streamed %v): %q, which a ClusterGuardrail keeps out of answers, reached the client: %q (the provider received %q)",
					seed, streamed, v, got, prompt)
			}
		}
	}
}

func pseudonymizes(opts []guardrailOption) bool {
	g := &policy.Guardrail{}
	c := &policy.Classifier{}
	for _, o := range opts {
		o(g, c)
	}
	return g.Action == policy.ActionPseudonymize
}
