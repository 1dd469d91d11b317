package uring

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestUnansweredForgets: a FORGET hands its node over, a BATCH_FORGET
// its nodes together, never the poll hack's, and a batch whose count
// says more than it holds hands over what it holds.
func TestUnansweredForgets(t *testing.T) {
	var got [][]Forgot
	forget := func(nodes []Forgot) { got = append(got, slices.Clone(nodes)) }
	var f flights

	one := binary.LittleEndian.AppendUint64(nil, 3)
	if !f.unanswered(&fuse.InHeader{Opcode: opForget, NodeId: 7}, one, forget) {
		t.Fatal("FORGET not taken")
	}
	f.unanswered(&fuse.InHeader{Opcode: opForget, NodeId: pollHackInode}, one, forget)

	batch := func(count uint32, nodes ...uint64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, count)
		b = binary.LittleEndian.AppendUint32(b, 0)
		for i, n := range nodes {
			b = binary.LittleEndian.AppendUint64(b, n)
			b = binary.LittleEndian.AppendUint64(b, uint64(i+1))
		}
		return b
	}
	// As read(2) leaves it: the header before, 8-aligned.
	buf := append(make([]byte, 40), batch(3, 11, pollHackInode, 12)...)
	if !f.unanswered(&fuse.InHeader{Opcode: opBatchForget}, buf[40:], forget) {
		t.Fatal("BATCH_FORGET not taken")
	}
	buf = append(make([]byte, 40), batch(5, 13)...)
	f.unanswered(&fuse.InHeader{Opcode: opBatchForget}, buf[40:], forget)

	want := [][]Forgot{{{7, 3}}, {{11, 1}, {12, 3}}, {{13, 1}}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("forgot %v, want %v", got, want)
	}
	if f.unanswered(&fuse.InHeader{Opcode: 1}, nil, forget) {
		t.Fatal("a LOOKUP taken as getting no reply")
	}
}
