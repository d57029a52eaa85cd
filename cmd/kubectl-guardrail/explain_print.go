package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// writeExplanation writes `explain pod` for a person, in the manner of kubectl describe.
func writeExplanation(w io.Writer, ex *explanation) {
	_, _ = fmt.Fprintf(w, "Pod:        %s/%s (%s)\n", ex.Pod.Namespace, ex.Pod.Name, ex.Pod.Phase)
	_, _ = fmt.Fprintf(w, "Labels:     %s\n", labelList(ex.Pod.Labels))
	_, _ = fmt.Fprintf(w, "Namespace:  %s (labels: %s)\n", ex.Pod.Namespace, labelList(ex.NamespaceLabels))
	_, _ = fmt.Fprintf(w, "Guard:      %s\n", guardLine(&ex.Guard))
	if ex.Enforcing {
		_, _ = fmt.Fprintln(w, "Enforcing:  yes, the latest generation of every policy that selects the pod")
	} else {
		_, _ = fmt.Fprintf(w, "Enforcing:  no: %s\n", ex.EnforcingWhy)
	}

	_, _ = fmt.Fprintln(w, "\nSelected by:")
	if len(ex.Selecting) == 0 {
		_, _ = fmt.Fprintln(w, "  no Guardrail or ClusterGuardrail: nothing is enforced on this pod's model traffic")
	} else {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "  KIND\tNAME\tMODE\tREADY\tGENERATION\tACKNOWLEDGED\tWHY")
		for _, m := range ex.Selecting {
			ack := "none"
			if m.Acknowledged != nil {
				ack = fmt.Sprint(*m.Acknowledged)
			}
			why := m.Why
			if m.CompileError != "" {
				why += " (not compiled: " + m.CompileError + ")"
			}
			_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.Kind, m.Name, m.Mode, m.Ready, m.Generation, ack, why)
		}
		_ = tw.Flush()
	}
	if len(ex.NotSelecting) > 0 {
		_, _ = fmt.Fprintln(w, "\nNot selecting:")
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "  KIND\tNAME\tWHY NOT")
		for _, m := range ex.NotSelecting {
			_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Kind, m.Name, m.Why)
		}
		_ = tw.Flush()
	}

	_, _ = fmt.Fprintln(w, "\nEffective rule per boundary (every selecting policy applies; Report never weakens Enforce):")
	if len(ex.Boundaries) == 0 {
		_, _ = fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "  BOUNDARY\tACTION\tON FAILURE\tENFORCED BY\tREPORTED BY")
	for _, b := range ex.Boundaries {
		_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.Phase, b.Action, b.OnFailure, keyList(b.Enforcing), keyList(b.Reporting))
	}
	_ = tw.Flush()
	for _, b := range ex.Boundaries {
		if len(b.Categories) == 0 {
			continue
		}
		_, _ = fmt.Fprintf(w, "  %s categories: %s\n", b.Phase, categoryLine(b.Categories))
	}
}

func guardLine(g *guardInfo) string {
	if !g.Injected {
		return "not injected"
	}
	parts := []string{"injected"}
	if g.Ready {
		parts = append(parts, "ready")
	} else {
		parts = append(parts, "not ready")
	}
	switch {
	case g.Lease == "":
		parts = append(parts, "no Lease")
	case g.Live:
		parts = append(parts, fmt.Sprintf("Lease %s live until %s", g.Lease, g.Expires.Format(time.RFC3339)))
	default:
		parts = append(parts, "Lease "+g.Lease+" expired")
	}
	return strings.Join(parts, ", ")
}

// keyList spells policy keys: namespace/name, and "name (cluster)" for the "/name" of a
// ClusterGuardrail.
func keyList(keys []string) string {
	if len(keys) == 0 {
		return "-"
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		if name, ok := strings.CutPrefix(k, "/"); ok {
			k = name + " (cluster)"
		}
		out[i] = k
	}
	return strings.Join(out, ", ")
}

// categoryLine groups categories by their effective action, strongest first as Compose
// ranked them: "Block: github-token (x (cluster)); Redact: email, phone (demo/y)".
func categoryLine(cats map[string]catEffect) string {
	type group struct {
		action, guardrail string
		ids               []string
	}
	groups := map[string]*group{}
	for id, ce := range cats {
		k := ce.Action + "\x00" + ce.Guardrail
		if groups[k] == nil {
			groups[k] = &group{action: ce.Action, guardrail: ce.Guardrail}
		}
		groups[k].ids = append(groups[k].ids, id)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		g := groups[k]
		sort.Strings(g.ids)
		parts[i] = fmt.Sprintf("%s %s by %s", g.action, strings.Join(g.ids, ", "), keyList([]string{g.guardrail}))
	}
	return strings.Join(parts, "; ")
}
