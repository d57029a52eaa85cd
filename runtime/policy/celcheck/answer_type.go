package celcheck

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/guardrail-dev/guardrail-operator/runtime/policy/rulelang"
)

// Answer is an answer as the rules see it.
type Answer = rulelang.Answer

// The answer's CEL type, policy.Answer, is declared here by hand rather than with
// cel-go's ext.NativeTypes. That package (ext) also holds cel-go's string, math and
// encoder libraries and links golang.org/x/text's message catalogues: about 1 MB of the
// guard's binary and 0.2-0.5 MiB of every guard's resident memory, for four fields.

// answerTypeName is the answer's type as rules name it (type(x) == policy.Answer,
// policy.Answer{choice: 'other'}).
const answerTypeName = "policy.Answer"

var answerType = types.NewObjectType(answerTypeName, traits.FieldTesterType, traits.IndexerType)

// answerField is one field of policy.Answer: its CEL type and how to read it.
type answerField struct {
	name string
	typ  *types.Type
	get  func(*Answer) ref.Val
	set  func(*Answer, ref.Val) error
}

var answerFields = []answerField{
	{"type", types.StringType, func(a *Answer) ref.Val { return types.String(a.Type) }, setString(func(a *Answer) *string { return &a.Type })},
	{"probability", types.DoubleType, func(a *Answer) ref.Val { return types.Double(a.Probability) }, setDouble(func(a *Answer) *float64 { return &a.Probability })},
	{"choice", types.StringType, func(a *Answer) ref.Val { return types.String(a.Choice) }, setString(func(a *Answer) *string { return &a.Choice })},
	{"score", types.DoubleType, func(a *Answer) ref.Val { return types.Double(a.Score) }, setDouble(func(a *Answer) *float64 { return &a.Score })},
}

func setString(f func(*Answer) *string) func(*Answer, ref.Val) error {
	return func(a *Answer, v ref.Val) error {
		s, ok := v.(types.String)
		if !ok {
			return fmt.Errorf("type conversion error from '%s' to 'string'", v.Type().TypeName())
		}
		*f(a) = string(s)
		return nil
	}
}

func setDouble(f func(*Answer) *float64) func(*Answer, ref.Val) error {
	return func(a *Answer, v ref.Val) error {
		d, ok := v.(types.Double)
		if !ok {
			return fmt.Errorf("type conversion error from '%s' to 'double'", v.Type().TypeName())
		}
		*f(a) = float64(d)
		return nil
	}
}

func findAnswerField(name string) (*answerField, bool) {
	for i := range answerFields {
		if answerFields[i].name == name {
			return &answerFields[i], true
		}
	}
	return nil, false
}

// answerTypes is the EnvOption that declares policy.Answer: it wraps the environment's
// type provider and adapter, answering for policy.Answer and passing everything else on.
func answerTypes() cel.EnvOption {
	return func(e *cel.Env) (*cel.Env, error) {
		p := &answerProvider{Provider: e.CELTypeProvider(), Adapter: e.CELTypeAdapter()}
		e, err := cel.CustomTypeAdapter(p)(e)
		if err != nil {
			return nil, err
		}
		return cel.CustomTypeProvider(p)(e)
	}
}

// answerProvider is a types.Provider and types.Adapter that knows policy.Answer.
type answerProvider struct {
	types.Provider
	types.Adapter
}

func (p *answerProvider) FindIdent(name string) (ref.Val, bool) {
	if name == answerTypeName {
		return answerType, true
	}
	return p.Provider.FindIdent(name)
}

func (p *answerProvider) FindStructType(name string) (*types.Type, bool) {
	if name == answerTypeName {
		return types.NewTypeTypeWithParam(answerType), true
	}
	return p.Provider.FindStructType(name)
}

func (p *answerProvider) FindStructFieldNames(name string) ([]string, bool) {
	if name != answerTypeName {
		return p.Provider.FindStructFieldNames(name)
	}
	names := make([]string, len(answerFields))
	for i, f := range answerFields {
		names[i] = f.name
	}
	return names, true
}

func (p *answerProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if name != answerTypeName {
		return p.Provider.FindStructFieldType(name, field)
	}
	f, ok := findAnswerField(field)
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: f.typ,
		IsSet: func(obj any) bool {
			a, ok := asAnswer(obj)
			return ok && !isZero(f.get(a))
		},
		GetFrom: func(obj any) (any, error) {
			a, ok := asAnswer(obj)
			if !ok {
				return nil, fmt.Errorf("no such field '%s' on %T", field, obj)
			}
			return f.get(a), nil
		},
	}, true
}

func (p *answerProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if name != answerTypeName {
		return p.Provider.NewValue(name, fields)
	}
	var a Answer
	for n, v := range fields {
		f, ok := findAnswerField(n)
		if !ok {
			return types.NewErr("no such field: %s", n)
		}
		if err := f.set(&a, v); err != nil {
			return types.NewErrFromString(err.Error())
		}
	}
	return answerVal{a}
}

func (p *answerProvider) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case Answer:
		return answerVal{v}
	case *Answer:
		return answerVal{*v}
	case map[string]Answer:
		return types.NewDynamicMap(p, v)
	}
	return p.Adapter.NativeToValue(v)
}

func asAnswer(obj any) (*Answer, bool) {
	switch o := obj.(type) {
	case answerVal:
		return &o.a, true
	case Answer:
		return &o, true
	case *Answer:
		return o, o != nil
	}
	return nil, false
}

func isZero(v ref.Val) bool {
	switch v := v.(type) {
	case types.String:
		return v == ""
	case types.Double:
		return v == 0
	}
	return false
}

// answerVal is an Answer as a CEL value.
type answerVal struct{ a Answer }

var (
	answerGoType    = reflect.TypeFor[Answer]()
	answerPtrGoType = reflect.TypeFor[*Answer]()
)

func (v answerVal) ConvertToNative(t reflect.Type) (any, error) {
	switch t {
	case answerGoType:
		return v.a, nil
	case answerPtrGoType:
		a := v.a
		return &a, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", answerTypeName, t)
}

func (v answerVal) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t == types.TypeType:
		return answerType
	case t.TypeName() == answerTypeName:
		return v
	}
	return types.NewErr("type conversion error from '%s' to '%s'", answerTypeName, t)
}

func (v answerVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(answerVal)
	return types.Bool(ok && o.a == v.a)
}

func (v answerVal) Type() ref.Type { return answerType }

func (v answerVal) Value() any { return v.a }

func (v answerVal) IsZeroValue() bool { return v.a == Answer{} }

// Get reads a field by name (the interpreter's path for a field of a value it did not
// type-check, such as dyn(answers.topic).choice).
func (v answerVal) Get(field ref.Val) ref.Val {
	f, err := v.field(field)
	if err != nil {
		return err
	}
	return f.get(&v.a)
}

// IsSet reports whether a field holds more than its zero value, as has() asks.
func (v answerVal) IsSet(field ref.Val) ref.Val {
	f, err := v.field(field)
	if err != nil {
		return err
	}
	return types.Bool(!isZero(f.get(&v.a)))
}

func (v answerVal) field(field ref.Val) (*answerField, ref.Val) {
	name, ok := field.(types.String)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(field)
	}
	f, found := findAnswerField(string(name))
	if !found {
		return nil, types.NewErr("no such field: %s", name)
	}
	return f, nil
}
