// Package sse reads and writes server-sent event streams (the WHATWG "text/event-stream"
// format) for the guard's streaming path. It is the product's own SSE path, written by hand
// (STYLE.md): the Reader keeps the exact bytes every event was read from so that the proxy
// can forward allowed events byte for byte, bounds how much it buffers, and does not
// allocate per event in the common case; the Writer flushes after each event.
package sse

import (
	"errors"
	"strconv"
)

// Kind tells an event from bytes that carry none.
type Kind uint8

const (
	// KindEvent is a block of field lines ended by a blank line. Per the WHATWG algorithm
	// it dispatches a message event only when it has at least one data line (HasData); a
	// block without one (only id:, retry:, event: or unknown fields) is still returned so
	// that its bytes can be forwarded.
	KindEvent Kind = iota
	// KindComment is bytes that carry no event: comment lines (":" prefix, used for
	// keep-alives) seen before any field of a block, and blank lines that dispatch
	// nothing. Forward them as they are or drop them.
	KindComment
	// KindIncomplete is the tail of a stream that ended in the middle of a block (no
	// terminating blank line). Per the WHATWG algorithm it is not dispatched; its fields
	// are filled from its complete lines. It is always the last item before io.EOF.
	KindIncomplete
)

// String returns "event", "comment" or "incomplete".
func (k Kind) String() string {
	switch k {
	case KindEvent:
		return "event"
	case KindComment:
		return "comment"
	case KindIncomplete:
		return "incomplete"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one item of a stream: an event with its fields, or comment bytes, together with
// the exact bytes it was read from.
//
// The byte slices of an Event returned by Reader.Next alias the Reader's buffers and are
// valid only until the next call to Next or Reset: copy what must outlive it.
type Event struct {
	Kind Kind
	// Type is the value of the last "event" field (empty when absent: a "message" event).
	Type []byte
	// Data is the values of the "data" fields joined with "\n".
	Data []byte
	// HasData reports whether the block had at least one "data" field; Data is empty for
	// a single "data:" line too.
	HasData bool
	// ID is the value of the last valid "id" field; HasID reports whether there was one
	// (an empty ID resets the last event ID).
	ID    []byte
	HasID bool
	// Retry is the reconnection time in milliseconds of the last valid "retry" field, or
	// -1 when there was none.
	Retry int64
	// Raw is the exact bytes of the item, from the first byte of its first line to the
	// last byte of its terminating blank line (a leading byte-order mark and the LF of a
	// CRLF split across reads included). The concatenation of the Raw of all items is the
	// input consumed so far.
	Raw []byte
}

// IsType reports whether the event's type is t.
func (e *Event) IsType(t string) bool { return string(e.Type) == t }

// DefaultMaxEventSize is the maximum size of an event when none is configured: 1 MiB.
const DefaultMaxEventSize = 1 << 20

// ErrEventTooLarge is matched (errors.Is) by the *EventTooLargeError the Reader returns for
// an event or line larger than its limit.
var ErrEventTooLarge = errors.New("sse: event too large")

// EventTooLargeError is returned by Reader.Next when an item exceeds the maximum event size.
// The Reader is unusable afterwards: the stream cannot be resynchronised.
type EventTooLargeError struct {
	// Limit is the maximum event size in bytes.
	Limit int
}

func (e *EventTooLargeError) Error() string {
	return "sse: event larger than " + strconv.Itoa(e.Limit) + " bytes"
}

// Is makes errors.Is(err, ErrEventTooLarge) true.
func (e *EventTooLargeError) Is(target error) bool { return target == ErrEventTooLarge }

// ErrInvalidField is returned by the Writer and AppendEvent callers for an event type or id
// that contains a line break (or, for an id, a NUL), which the format cannot carry.
var ErrInvalidField = errors.New("sse: event type or id contains a line break or NUL")
