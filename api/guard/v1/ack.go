package guardv1

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxRefusalChars bounds a guard's refusal once it is in a Lease, a condition or an Event.
const MaxRefusalChars = 256

// Ack is what a guard's Lease says at a given time.
type Ack struct {
	// Pod and UID are the guard's pod, in the namespace LabelLeasePodNamespace names.
	Pod, UID string
	// Live is true while the guard answers: its last renewal is within the Lease's duration.
	Live bool
	// Expires is when Live turns (or turned) false; zero for a Lease never renewed.
	Expires time.Time
	// Enforced maps each Guardrail of the policy the guard runs to its generation.
	Enforced map[string]int64
	// Refused is the version the guard refused and why, printable and bounded: free text
	// of the guard, safe for a condition message.
	Refused string
}

// ReadAck reads a guard's Lease as of now, from its annotations and, when it was ever
// renewed (renewed is not nil), its last renewal and duration.
func ReadAck(annotations map[string]string, renewed *time.Time, duration time.Duration, now time.Time) Ack {
	a := Ack{
		Pod:      annotations[AnnotationLeasePod],
		UID:      annotations[AnnotationLeasePodUID],
		Enforced: ParseEnforced(annotations[AnnotationEnforced]),
		Refused:  Printable(annotations[AnnotationRefused], MaxRefusalChars),
	}
	if renewed != nil {
		a.Expires = renewed.Add(duration)
		a.Live = now.Before(a.Expires)
	}
	return a
}

// FormatEnforced is the value of AnnotationEnforced for Guardrails by name → generation.
func FormatEnforced(generations map[string]int64) string {
	parts := make([]string, 0, len(generations))
	for name, gen := range generations {
		parts = append(parts, name+"="+strconv.FormatInt(gen, 10))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// ParseEnforced reads AnnotationEnforced: Guardrail name → generation.
func ParseEnforced(v string) map[string]int64 {
	out := map[string]int64{}
	for _, p := range strings.Split(v, ",") {
		name, gen, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(gen, 10, 64); err == nil {
			out[name] = n
		}
	}
	return out
}

// Printable returns s with every rune that is not printable (controls, format characters,
// invalid UTF-8) dropped, spaces for line breaks and tabs, cut to at most limit bytes on a
// rune boundary: free text a guard sends, made fit for a condition message or an Event.
func Printable(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case r == utf8.RuneError || !unicode.IsPrint(r):
			continue
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
