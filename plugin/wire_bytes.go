package plugin

import "strconv"

// maxKeptWireBytes is the largest buffer a wireBytes keeps from one
// message to the next: a rare large message is not held for the
// stream's life.
const maxKeptWireBytes = 64 << 10

// wireBytes is a message that gRPC's protobuf codec hands over as its
// wire bytes. It has Marshal and Unmarshal methods of its own, which
// protobuf's support for messages of its first API (protoadapt.MessageV1)
// calls as they are: a received message is one copy out of gRPC's buffer
// into b, reused from message to message, and a sent one is b, not
// copied. An empty message carrying the bytes as unknown fields (rawMessage)
// costs a reflective reset, a copy grown field by field and a walk of
// its fields per message (docs/decisions.md, "Plugin transport"). The
// wire is the same either way: the bytes are the message's.
type wireBytes struct{ b []byte }

// Reset empties the message, keeping its buffer.
func (w *wireBytes) Reset() { w.b = w.b[:0] }

// String says how many bytes the message holds, never what they are.
func (w *wireBytes) String() string { return strconv.Itoa(len(w.b)) + " bytes" }

// ProtoMessage marks wireBytes as a protobuf message.
func (*wireBytes) ProtoMessage() {}

// Unmarshal copies b, which belongs to gRPC, into the message; it never
// fails: what the bytes hold is for the wire readers to decide.
func (w *wireBytes) Unmarshal(b []byte) error {
	if cap(w.b) > maxKeptWireBytes && len(b) <= maxKeptWireBytes {
		w.b = nil
	}
	w.b = append(w.b[:0], b...)
	return nil
}

// Marshal returns the message's bytes as they are; it never fails.
func (w *wireBytes) Marshal() ([]byte, error) { return w.b, nil }
