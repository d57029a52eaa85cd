package field

import (
	"testing"

	k8sfield "k8s.io/apimachinery/pkg/util/validation/field"
)

// step builds a path: a name to start or continue it, or a subscript.
type step struct {
	op  string // "name", "names" (Child with more names), "index", "key"
	arg string
	n   int
}

// omit stands for OmitValueType in the table, mapped to each package's own type.
type omit struct{}

type mode string

type stringer struct{}

func (s stringer) String() string { return "stringer" }

func buildOurs(steps []step) *Path {
	var p *Path
	for _, s := range steps {
		switch s.op {
		case "name":
			if p == nil {
				p = NewPath(s.arg)
			} else {
				p = p.Child(s.arg)
			}
		case "names":
			if p == nil {
				p = NewPath(s.arg, "b", "c")
			} else {
				p = p.Child(s.arg, "b", "c")
			}
		case "index":
			p = p.Index(s.n)
		case "key":
			p = p.Key(s.arg)
		}
	}
	return p
}

func buildTheirs(steps []step) *k8sfield.Path {
	var p *k8sfield.Path
	for _, s := range steps {
		switch s.op {
		case "name":
			if p == nil {
				p = k8sfield.NewPath(s.arg)
			} else {
				p = p.Child(s.arg)
			}
		case "names":
			if p == nil {
				p = k8sfield.NewPath(s.arg, "b", "c")
			} else {
				p = p.Child(s.arg, "b", "c")
			}
		case "index":
			p = p.Index(s.n)
		case "key":
			p = p.Key(s.arg)
		}
	}
	return p
}

type errCase struct {
	ctor   string // Invalid, Required, Forbidden, NotFound, Duplicate, NotSupported
	path   []step
	value  any
	detail string
	valid  []string
}

func (c errCase) ours() *Error {
	p, v := buildOurs(c.path), c.value
	if _, ok := v.(omit); ok {
		v = OmitValueType{}
	}
	switch c.ctor {
	case "Invalid":
		return Invalid(p, v, c.detail)
	case "Required":
		return Required(p, c.detail)
	case "Forbidden":
		return Forbidden(p, c.detail)
	case "NotFound":
		return NotFound(p, v)
	case "Duplicate":
		return Duplicate(p, v)
	case "NotSupported":
		return NotSupported(p, v, c.valid)
	}
	panic(c.ctor)
}

func (c errCase) theirs() *k8sfield.Error {
	p, v := buildTheirs(c.path), c.value
	if _, ok := v.(omit); ok {
		v = k8sfield.OmitValueType{}
	}
	switch c.ctor {
	case "Invalid":
		return k8sfield.Invalid(p, v, c.detail)
	case "Required":
		return k8sfield.Required(p, c.detail)
	case "Forbidden":
		return k8sfield.Forbidden(p, c.detail)
	case "NotFound":
		return k8sfield.NotFound(p, v)
	case "Duplicate":
		return k8sfield.Duplicate(p, v)
	case "NotSupported":
		return k8sfield.NotSupported(p, v, c.valid)
	}
	panic(c.ctor)
}

var (
	spec     = []step{{op: "name", arg: "spec"}}
	deep     = []step{{op: "name", arg: "spec"}, {op: "name", arg: "rules"}, {op: "key", arg: "no-pii"}, {op: "name", arg: "expression"}}
	indexed  = []step{{op: "name", arg: "spec"}, {op: "name", arg: "categories"}, {op: "index", n: 3}, {op: "name", arg: "id"}}
	dotted   = []step{{op: "name", arg: "spec"}, {op: "name", arg: "builtin"}, {op: "name", arg: "patterns[0].regex"}}
	multi    = []step{{op: "names", arg: "a"}, {op: "names", arg: "x"}, {op: "index", n: 0}}
	oddities = []step{{op: "name", arg: ""}, {op: "key", arg: ""}, {op: "name", arg: "x"}, {op: "name", arg: ""}}
	keyRoot  = []step{{op: "key", arg: "tier"}}
	nilPath  = []step(nil)
	nilChild = []step{{op: "index", n: 2}, {op: "name", arg: "key"}}
)

var errCases = []errCase{
	{ctor: "Invalid", path: spec, value: "2 backends", detail: "exactly one backend must be set"},
	{ctor: "Invalid", path: deep, value: `answers.x == "a" && b < 'c'`, detail: "ERROR: <input>:1:1: undeclared reference"},
	{ctor: "Invalid", path: indexed, value: "Bad_ID\x00é\"", detail: "a; b"},
	{ctor: "Invalid", path: dotted, value: omit{}, detail: "error parsing regexp: missing closing ]"},
	{ctor: "Invalid", path: spec, value: omit{}},
	{ctor: "Invalid", path: spec, value: 5},
	{ctor: "Invalid", path: spec, value: int32(-5), detail: "must not be negative"},
	{ctor: "Invalid", path: spec, value: int64(1 << 40)},
	{ctor: "Invalid", path: spec, value: 0.8, detail: "must be between 0 and 1"},
	{ctor: "Invalid", path: spec, value: 1e21},
	{ctor: "Invalid", path: spec, value: float32(0.1)},
	{ctor: "Invalid", path: spec, value: true},
	{ctor: "Invalid", path: spec, value: uint8(7)},
	{ctor: "Invalid", path: spec, value: ""},
	{ctor: "Invalid", path: spec, value: nil, detail: "nil"},
	{ctor: "Invalid", path: spec, value: mode("<Enforce&>")},
	{ctor: "Invalid", path: spec, value: []mode{"text", "video"}, detail: "the builtin backend inspects text only"},
	{ctor: "Invalid", path: spec, value: []string(nil)},
	{ctor: "Invalid", path: spec, value: map[string]int{"b": 1, "a": 2}},
	{ctor: "Invalid", path: spec, value: struct{ A int }{3}},
	{ctor: "Invalid", path: spec, value: stringer{}},
	{ctor: "Invalid", path: spec, value: func() {}},
	{ctor: "Invalid", path: multi, value: "v"},
	{ctor: "Invalid", path: oddities, value: "v"},
	{ctor: "Invalid", path: keyRoot, value: "v"},
	{ctor: "Invalid", path: nilPath, value: "Bad Key", detail: "name part must consist of ..."},
	{ctor: "Invalid", path: nilChild, value: "v"},
	{ctor: "Required", path: spec},
	{ctor: "Required", path: indexed, detail: "the message a blocked caller receives"},
	{ctor: "Forbidden", path: spec, detail: "the builtin backend takes no credentials"},
	{ctor: "Forbidden", path: nilPath},
	{ctor: "NotFound", path: deep, value: "hatred"},
	{ctor: "NotFound", path: spec, value: "x (classifier c has a, b)"},
	{ctor: "NotFound", path: spec, value: omit{}},
	{ctor: "NotFound", path: spec, value: 3},
	{ctor: "Duplicate", path: indexed, value: "violence"},
	{ctor: "Duplicate", path: spec, value: mode("x")},
	{ctor: "NotSupported", path: spec, value: mode("Sometimes"), valid: []string{"Enforce", "Report"}},
	{ctor: "NotSupported", path: indexed, value: "video", valid: []string{"text", "image", "audio", "file"}},
	{ctor: "NotSupported", path: spec, value: "x", valid: nil},
	{ctor: "NotSupported", path: spec, value: omit{}, valid: []string{`"q"`, ""}},
}

// Every constructor, value type and path shape prints what apimachinery's field package
// prints.
func TestErrorMatchesApimachinery(t *testing.T) {
	for i, c := range errCases {
		ours, theirs := c.ours(), c.theirs()
		if ours.Error() != theirs.Error() {
			t.Errorf("case %d (%s):\n ours   %q\n theirs %q", i, c.ctor, ours.Error(), theirs.Error())
		}
		if ours.ErrorBody() != theirs.ErrorBody() {
			t.Errorf("case %d body:\n ours   %q\n theirs %q", i, ours.ErrorBody(), theirs.ErrorBody())
		}
		if string(ours.Type) != string(theirs.Type) || ours.Field != theirs.Field || ours.Detail != theirs.Detail {
			t.Errorf("case %d: fields differ: %+v vs %+v", i, ours, theirs)
		}
	}
	for _, steps := range [][]step{spec, deep, indexed, dotted, multi, oddities, keyRoot, nilPath, nilChild} {
		if o, th := buildOurs(steps).String(), buildTheirs(steps).String(); o != th {
			t.Errorf("path %v: ours %q, theirs %q", steps, o, th)
		}
	}
}

// Lists aggregate as apimachinery's do: one error alone, several in brackets, repeated
// messages once.
func TestAggregateMatchesApimachinery(t *testing.T) {
	lists := [][]int{
		{0}, {5}, {0, 1}, {0, 1, 2}, {27, 28, 29, 30}, {0, 0}, {0, 1, 0}, {3, 3, 3}, {0, 1, 1, 2, 0},
	}
	for _, idx := range lists {
		var ours ErrorList
		var theirs k8sfield.ErrorList
		for _, i := range idx {
			ours = append(ours, errCases[i].ours())
			theirs = append(theirs, errCases[i].theirs())
		}
		if o, th := ours.ToAggregate().Error(), theirs.ToAggregate().Error(); o != th {
			t.Errorf("list %v:\n ours   %q\n theirs %q", idx, o, th)
		}
	}
	if ErrorList(nil).ToAggregate() != nil || (ErrorList{}).ToAggregate() != nil {
		t.Error("an empty list aggregates to a non-nil error")
	}
}
