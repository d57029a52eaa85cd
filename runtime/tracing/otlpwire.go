package tracing

import (
	"math"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP trace request, encoded by hand.
//
// The guard writes OTLP's ExportTraceServiceRequest itself, field by field with protowire
// (a few hundred lines with no state), instead of converting the SDK's spans to OTLP's
// generated messages (the SDK's otlptrace exporter) and marshalling those with
// google.golang.org/protobuf/proto. The guard runs beside every injected pod, so what it
// links costs resident memory many times over: the generated packages register their
// descriptors at start in every guard, traced or not, and the first export runs protobuf's
// reflection-based marshaller, whose lazy setup of each message's coder touches code and
// data pages a guard otherwise never uses. Encoding by hand costs neither, and makes no
// intermediate message tree per export.
//
// The encoding is the one otlptrace's transform and proto.Marshal give (otlpwire_test.go
// decodes it with the generated types and compares it with theirs, and with their bytes),
// but for two things: a link's trace_state, which the OTLP protocol has and otlptrace
// leaves out, is sent; and a string that is not valid UTF-8, which proto.Marshal refuses
// (losing the whole batch), is sent with U+FFFD in place of each run of invalid bytes.
//
// Field numbers are those of opentelemetry-proto (trace/v1/trace.proto,
// common/v1/common.proto, resource/v1/resource.proto,
// collector/trace/v1/trace_service.proto). Scalar fields at their zero value are left out,
// as proto3 marshals them; message fields the transform always sets (a span's status, an
// attribute's value, a resource) are written even when empty, since an empty message is
// not an absent one; so is every member of AnyValue's oneof.

// ExportTraceServiceRequest.
const reqResourceSpans protowire.Number = 1

// ResourceSpans.
const (
	rsResource   protowire.Number = 1
	rsScopeSpans protowire.Number = 2
	rsSchemaURL  protowire.Number = 3
)

// Resource.
const resAttributes protowire.Number = 1

// ScopeSpans.
const (
	ssScope     protowire.Number = 1
	ssSpans     protowire.Number = 2
	ssSchemaURL protowire.Number = 3
)

// InstrumentationScope.
const (
	scopeName       protowire.Number = 1
	scopeVersion    protowire.Number = 2
	scopeAttributes protowire.Number = 3
)

// Span.
const (
	spanTraceID           protowire.Number = 1
	spanSpanID            protowire.Number = 2
	spanTraceState        protowire.Number = 3
	spanParentSpanID      protowire.Number = 4
	spanName              protowire.Number = 5
	spanKind              protowire.Number = 6
	spanStartTime         protowire.Number = 7 // fixed64
	spanEndTime           protowire.Number = 8 // fixed64
	spanAttributes        protowire.Number = 9
	spanDroppedAttributes protowire.Number = 10
	spanEvents            protowire.Number = 11
	spanDroppedEvents     protowire.Number = 12
	spanLinks             protowire.Number = 13
	spanDroppedLinks      protowire.Number = 14
	spanStatus            protowire.Number = 15
	spanFlags             protowire.Number = 16 // fixed32
)

// Span.Event.
const (
	eventTime              protowire.Number = 1 // fixed64
	eventName              protowire.Number = 2
	eventAttributes        protowire.Number = 3
	eventDroppedAttributes protowire.Number = 4
)

// Span.Link.
const (
	linkTraceID           protowire.Number = 1
	linkSpanID            protowire.Number = 2
	linkTraceState        protowire.Number = 3
	linkAttributes        protowire.Number = 4
	linkDroppedAttributes protowire.Number = 5
	linkFlags             protowire.Number = 6 // fixed32
)

// Status (field 1 is reserved).
const (
	statusMessage protowire.Number = 2
	statusCode    protowire.Number = 3
)

// Status.StatusCode.
const (
	statusCodeOK    = 1
	statusCodeError = 2
)

// Span.SpanKind.
const (
	kindInternal = 1
	kindServer   = 2
	kindClient   = 3
	kindProducer = 4
	kindConsumer = 5
)

// SpanFlags: the low 8 bits are the W3C trace flags; these two say whether the parent
// (of a link: the linked span) is remote, and that the first bit is known.
const (
	flagsHasIsRemote = 0x100
	flagsIsRemote    = 0x200
)

// KeyValue.
const (
	kvKey   protowire.Number = 1
	kvValue protowire.Number = 2
)

// AnyValue's oneof.
const (
	anyString protowire.Number = 1
	anyBool   protowire.Number = 2
	anyInt    protowire.Number = 3
	anyDouble protowire.Number = 4 // fixed64
	anyArray  protowire.Number = 5
	anyBytes  protowire.Number = 7
)

// ArrayValue.
const arrayValues protowire.Number = 1

// resourceGroup is the spans of one resource, by instrumentation scope, in the order
// they first appear.
type resourceGroup struct {
	key    attribute.Distinct
	res    *resource.Resource
	scopes []scopeGroup
}

type scopeGroup struct {
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
}

// groupSpans groups spans by resource, then by instrumentation scope (name, version,
// schema URL and attributes), as otlptrace does; nil spans are skipped. A guard has one
// resource and one scope, so the groups are searched in order rather than hashed.
func groupSpans(spans []sdktrace.ReadOnlySpan) []resourceGroup {
	var groups []resourceGroup
	for _, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource(), s.InstrumentationScope()
		key := res.Equivalent()
		r := -1
		for i := range groups {
			if groups[i].key == key {
				r = i
				break
			}
		}
		if r < 0 {
			groups = append(groups, resourceGroup{key: key, res: res})
			r = len(groups) - 1
		}
		g := &groups[r]
		sc := -1
		for i := range g.scopes {
			if g.scopes[i].scope == scope {
				sc = i
				break
			}
		}
		if sc < 0 {
			g.scopes = append(g.scopes, scopeGroup{scope: scope})
			sc = len(g.scopes) - 1
		}
		g.scopes[sc].spans = append(g.scopes[sc].spans, s)
	}
	return groups
}

// appendRequest appends the ExportTraceServiceRequest of spans to b. It appends nothing
// when spans holds no span (nil ones are skipped).
func appendRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	for _, g := range groupSpans(spans) {
		var rs int
		b, rs = openMessage(b, reqResourceSpans)
		b = appendResourceSpans(b, &g)
		b = closeMessage(b, rs)
	}
	return b
}

func appendResourceSpans(b []byte, g *resourceGroup) []byte {
	if g.res != nil {
		var r int
		b, r = openMessage(b, rsResource)
		iter := g.res.Iter()
		for iter.Next() {
			b = appendKeyValue(b, resAttributes, iter.Attribute())
		}
		b = closeMessage(b, r)
	}
	for i := range g.scopes {
		var ss int
		b, ss = openMessage(b, rsScopeSpans)
		b = appendScopeSpans(b, &g.scopes[i])
		b = closeMessage(b, ss)
	}
	return appendString(b, rsSchemaURL, g.res.SchemaURL())
}

func appendScopeSpans(b []byte, g *scopeGroup) []byte {
	// The zero scope is no scope (otlptrace leaves the field out).
	if g.scope != (instrumentation.Scope{}) {
		var sc int
		b, sc = openMessage(b, ssScope)
		b = appendString(b, scopeName, g.scope.Name)
		b = appendString(b, scopeVersion, g.scope.Version)
		iter := g.scope.Attributes.Iter()
		for iter.Next() {
			b = appendKeyValue(b, scopeAttributes, iter.Attribute())
		}
		b = closeMessage(b, sc)
	}
	for _, s := range g.spans {
		var sp int
		b, sp = openMessage(b, ssSpans)
		b = appendSpan(b, s)
		b = closeMessage(b, sp)
	}
	return appendString(b, ssSchemaURL, g.scope.SchemaURL)
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, spanTraceID, tid[:])
	b = appendBytes(b, spanSpanID, sid[:])
	b = appendString(b, spanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, spanParentSpanID, psid[:])
	}
	b = appendString(b, spanName, s.Name())
	b = appendVarint(b, spanKind, kind(s.SpanKind()))
	b = appendFixed64(b, spanStartTime, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, spanEndTime, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, spanAttributes, kv)
	}
	b = appendVarint(b, spanDroppedAttributes, clampCount(s.DroppedAttributes()))
	for _, e := range s.Events() {
		var ev int
		b, ev = openMessage(b, spanEvents)
		b = appendFixed64(b, eventTime, unixNano(e.Time.UnixNano()))
		b = appendString(b, eventName, e.Name)
		for _, kv := range e.Attributes {
			b = appendKeyValue(b, eventAttributes, kv)
		}
		b = appendVarint(b, eventDroppedAttributes, clampCount(e.DroppedAttributeCount))
		b = closeMessage(b, ev)
	}
	b = appendVarint(b, spanDroppedEvents, clampCount(s.DroppedEvents()))
	for _, l := range s.Links() {
		var lk int
		b, lk = openMessage(b, spanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytes(b, linkTraceID, ltid[:])
		b = appendBytes(b, linkSpanID, lsid[:])
		b = appendString(b, linkTraceState, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			b = appendKeyValue(b, linkAttributes, kv)
		}
		b = appendVarint(b, linkDroppedAttributes, clampCount(l.DroppedAttributeCount))
		b = appendFixed32(b, linkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		b = closeMessage(b, lk)
	}
	b = appendVarint(b, spanDroppedLinks, clampCount(s.DroppedLinks()))
	// The status is always written, UNSET and without a message included.
	var st int
	b, st = openMessage(b, spanStatus)
	status := s.Status()
	b = appendString(b, statusMessage, status.Description)
	b = appendVarint(b, statusCode, statusCodeOf(status.Code))
	b = closeMessage(b, st)
	return appendFixed32(b, spanFlags, flags(sc.TraceFlags(), parent.IsRemote()))
}

// flags is a span's or link's SpanFlags: the W3C trace flags, and whether the parent (the
// linked span) is remote.
func flags(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(tf) | flagsHasIsRemote
	if remote {
		f |= flagsIsRemote
	}
	return f
}

func kind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return kindInternal
	case trace.SpanKindServer:
		return kindServer
	case trace.SpanKindClient:
		return kindClient
	case trace.SpanKindProducer:
		return kindProducer
	case trace.SpanKindConsumer:
		return kindConsumer
	}
	return 0 // SPAN_KIND_UNSPECIFIED
}

func statusCodeOf(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusCodeOK
	case codes.Error:
		return statusCodeError
	}
	return 0 // STATUS_CODE_UNSET
}

// unixNano is a time for OTLP: 0 before 1970 (and for the zero time).
func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

// clampCount is a dropped count as OTLP's uint32.
func clampCount(n int) uint64 {
	return uint64(min(max(int64(n), 0), math.MaxUint32))
}

// appendKeyValue appends a KeyValue as field num.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	var m int
	b, m = openMessage(b, num)
	b = appendString(b, kvKey, string(kv.Key))
	var v int
	b, v = openMessage(b, kvValue)
	b = appendAnyValue(b, kv.Value)
	b = closeMessage(b, v)
	return closeMessage(b, m)
}

// appendAnyValue appends the fields of v's AnyValue: one member of the oneof, written even
// when zero (an empty string is a value); none for an EMPTY value. A type this code does
// not know is the string "INVALID", as otlptrace writes it.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.EMPTY:
		return b
	case attribute.BOOL:
		return appendBoolValue(b, v.AsBool())
	case attribute.INT64:
		return appendIntValue(b, v.AsInt64())
	case attribute.FLOAT64:
		return appendDoubleValue(b, v.AsFloat64())
	case attribute.STRING:
		return appendStringValue(b, v.AsString())
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, anyBytes, protowire.BytesType)
		return protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), appendBoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), appendIntValue)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), appendDoubleValue)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), appendStringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), appendAnyValue)
	}
	return appendStringValue(b, "INVALID")
}

// appendArray appends an ArrayValue (written even when it has no element) of the values
// in vs, each an AnyValue message whose fields appendElem appends.
func appendArray[T any](b []byte, vs []T, appendElem func([]byte, T) []byte) []byte {
	var a int
	b, a = openMessage(b, anyArray)
	for _, v := range vs {
		var e int
		b, e = openMessage(b, arrayValues)
		b = appendElem(b, v)
		b = closeMessage(b, e)
	}
	return closeMessage(b, a)
}

func appendBoolValue(b []byte, v bool) []byte {
	b = protowire.AppendTag(b, anyBool, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeBool(v))
}

func appendIntValue(b []byte, v int64) []byte {
	b = protowire.AppendTag(b, anyInt, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendDoubleValue(b []byte, v float64) []byte {
	b = protowire.AppendTag(b, anyDouble, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func appendStringValue(b []byte, v string) []byte {
	b = protowire.AppendTag(b, anyString, protowire.BytesType)
	return protowire.AppendString(b, validUTF8(v))
}

// appendString appends a string field, unless empty (proto3's implicit presence).
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, validUTF8(s))
}

// validUTF8 is s with each run of bytes that are not UTF-8 replaced by U+FFFD. A proto3
// string must be UTF-8: a collector that decodes with the generated messages refuses a
// request with one that is not, and so would lose the whole batch for one attribute (a
// model or tool name as a client sent it). proto.Marshal refused to encode such a batch.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// appendBytes appends a bytes field, unless empty.
func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// appendVarint appends a varint field (uint32, enum), unless zero.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendFixed64 appends a fixed64 field, unless zero.
func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

// appendFixed32 appends a fixed32 field, unless zero.
func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// openMessage appends the tag of the message field num and a one-byte placeholder for its
// length; it returns where the message's fields start, for closeMessage. A message's
// length is known only once its fields are written, so it is written then, in place.
func openMessage(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = append(b, 0)
	return b, len(b)
}

// closeMessage writes the length of the message whose fields start at start (openMessage)
// into its placeholder. A length of 128 bytes or more takes more than the placeholder's
// byte: the fields are moved up to make room, so the encoding stays the canonical one.
func closeMessage(b []byte, start int) []byte {
	n := uint64(len(b) - start) //nolint:gosec // a length
	w := protowire.SizeVarint(n)
	if w > 1 {
		end := len(b)
		for range w - 1 {
			b = append(b, 0)
		}
		copy(b[start+w-1:], b[start:end])
	}
	// Written over the placeholder (and the room made after it): b's capacity holds it.
	_ = protowire.AppendVarint(b[:start-1], n)
	return b
}
