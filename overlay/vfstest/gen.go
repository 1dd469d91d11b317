//go:build linux

package vfstest

import (
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
)

// Op is one random operation of a model-based test: what it does (Kind)
// and with what. A test reads the fields its kind needs.
type Op struct {
	Kind   string
	P, Q   string // the paths it names
	Data   []byte
	Mode   fs.FileMode
	Offset int64
	Slot   int // which held descriptor
	Flag   int // how an open opens
}

func (o Op) String() string {
	return fmt.Sprintf("%s(%q, %q, %q, %o, %d, slot %d, flag %#o)", o.Kind, o.P, o.Q, o.Data, o.Mode, o.Offset, o.Slot, o.Flag)
}

// OpGen draws the operations of the model-based tests, the engine's
// (overlay TestModel) and the mount's (fusefs TestDifferential): each
// test says which kinds it has and how it picks paths and data, and
// replays a sequence from the seed of Rand.
type OpGen struct {
	Rand *rand.Rand
	// Kinds are drawn uniformly: a kind listed twice comes twice as
	// often.
	Kinds []string
	// Path picks a path; Data makes content (nil: a hex number and a
	// newline).
	Path func() string
	Data func() []byte
	// Modes, Flags: the permissions and open flags drawn from; Slots,
	// Offsets: how many descriptors and offsets there are.
	Modes   []fs.FileMode
	Flags   []int
	Slots   int
	Offsets int
}

// Next draws an operation. Every field is drawn whatever the kind, in
// one order, so a seed gives the same sequence as long as the test's
// tables stay the same.
func (g *OpGen) Next() Op {
	o := Op{Kind: g.Kinds[g.Rand.IntN(len(g.Kinds))], P: g.Path(), Q: g.Path()}
	if g.Data != nil {
		o.Data = g.Data()
	} else {
		o.Data = fmt.Appendf(nil, "%x\n", g.Rand.Uint32())
	}
	o.Mode = g.Modes[g.Rand.IntN(len(g.Modes))]
	o.Offset = int64(g.Rand.IntN(g.Offsets))
	o.Slot = g.Rand.IntN(g.Slots)
	o.Flag = g.Flags[g.Rand.IntN(len(g.Flags))]
	return o
}

// Weighted lists each kind as often as its weight, for OpGen.Kinds.
func Weighted(weights map[string]int) []string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(weights)) {
		for range weights[k] {
			kinds = append(kinds, k)
		}
	}
	return kinds
}
