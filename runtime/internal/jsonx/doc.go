// Package jsonx is the guard's JSON toolkit, shared by the provider codecs of package
// wire: a validator as strict as encoding/json's and several times faster on events
// (Valid), a scanner over validated bytes (Iter, StringEnd, ScanFields, SkipTable), an
// ordered object that rewrites a document and keeps every member it does not touch
// (Object), appenders that write JSON without reflection (AppendString, AppendInt,
// AppendArray), and a reflection-based decoder (Decode, DecodeRequest) that reads
// exactly what encoding/json reads but refuses a document naming one field in two
// spellings, or, for requests, twice (ambiguous.go says why).
//
// It knows nothing of providers or of what the guard judges; the codecs that do live in
// package wire. ReferenceDecode and ReferenceDecodeRequest are the decoder it replaced,
// encoding/json plus a walk, kept as the oracle of the fuzz tests here and in wire.
package jsonx
