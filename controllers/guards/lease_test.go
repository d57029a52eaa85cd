package guards

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	guardv1 "github.com/guardrail-dev/guardrail-operator/api/guard/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func lease(renewed time.Time, seconds int32, holder string, annotations map[string]string) *coordinationv1.Lease {
	t := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: coordinationv1.LeaseSpec{RenewTime: &t, LeaseDurationSeconds: ptr.To(seconds), HolderIdentity: ptr.To(holder)}}
}

func TestAGuardIsLiveUntilItsLeaseExpires(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name string
		l    *coordinationv1.Lease
		live bool
	}{
		{"renewed within its duration", lease(now.Add(-59*time.Second), 60, "", nil), true},
		{"renewed exactly its duration ago", lease(now.Add(-60*time.Second), 60, "", nil), false},
		{"never renewed", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(60))}}, false},
		{"without a duration", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(now))}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadAck(tc.l, now).Live; got != tc.live {
				t.Errorf("live %v, want %v", got, tc.live)
			}
		})
	}
	a := ReadAck(lease(now, 60, "", map[string]string{guardv1.AnnotationEnforced: "a=1,b=7", guardv1.AnnotationRefused: "v: bad\x07\nnews",
		guardv1.AnnotationLeasePod: "web-1", guardv1.AnnotationLeasePodUID: "u-1"}), now)
	if a.Enforced["b"] != 7 || a.Refused != "v: bad news" || a.Pod != "web-1" || a.UID != "u-1" {
		t.Errorf("ack %+v", a)
	}
}

func TestAPollRenewsAtAThirdOfTheDurationOrWhenTheAckChanges(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const d = 60 * time.Second
	for _, tc := range []struct {
		name string
		l    *coordinationv1.Lease
		due  bool
	}{
		{"renewed 19s ago", lease(now.Add(-19*time.Second), 60, "ns/p", nil), false},
		{"renewed 20s ago", lease(now.Add(-20*time.Second), 60, "ns/p", nil), true},
		{"written with another duration", lease(now, 30, "ns/p", nil), true},
		{"held by another pod name", lease(now, 60, "ns/q", nil), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RenewDue(tc.l, "ns/p", now, d); got != tc.due {
				t.Errorf("due %v, want %v", got, tc.due)
			}
		})
	}
}

// FuzzPrintable: whatever a guard sends, what reaches a condition or an Event is printable,
// valid UTF-8 and bounded.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "ok", "a\nb\tc", "\x1b[31mred", "\xff\xfe", "é\u202e\u200b", strings.Repeat("ß", 300)} {
		f.Add(s, 256)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<12 {
			return
		}
		out := Printable(s, limit)
		if len(out) > limit || !utf8.ValidString(out) {
			t.Fatalf("Printable(%q, %d) = %q", s, limit, out)
		}
		for _, r := range out {
			if !unicode.IsPrint(r) {
				t.Fatalf("Printable(%q) holds %U", s, r)
			}
		}
	})
}
