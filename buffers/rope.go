package buffers

import "math/rand/v2"

// A rope is a treap (a binary tree kept balanced by random heap-ordered
// priorities) of text chunks in document order, each node caching the
// metrics of its subtree. Nodes and chunks are never modified once built:
// an edit copies the O(log n) nodes on its path and at most a few chunks,
// so an old root stays a valid, unchanging text. That gives readers
// lock-free snapshots and lets a failed batch of edits leave the buffer as
// it was by simply keeping the old root. The nil *node is the empty text.
type node struct {
	left, right *node
	chunk       []byte  // never empty; may share its array with other nodes and snapshots
	own         metrics // of chunk
	sum         metrics // of the subtree
	prio        uint32
}

// chunking bounds chunk sizes: larger chunks mean fewer nodes, smaller
// ones less copying per edit. Every chunk holds at least min bytes unless
// it is the only one, and at most max. min must be more than context and
// max at least 2*min+3*maxCutShift, so that halves of an oversized chunk
// are big enough. Tests use tiny bounds to put boundaries everywhere.
type chunking struct{ min, max int }

// defaultChunking keeps a typing edit to about a kilobyte of copying and
// measuring, and node overhead (~100 bytes) under a tenth of the text.
var defaultChunking = chunking{min: 512, max: 2048}

// context is how many unchanged bytes an edit keeps on each side of the
// text it rewrites: legalCut looks at most three bytes either side of a
// boundary, so boundaries beyond this keep their legality.
const context = 3

func (n *node) size() int {
	if n == nil {
		return 0
	}
	return n.sum.bytes
}

func (n *node) metrics() metrics {
	if n == nil {
		return metrics{}
	}
	return n.sum
}

// with returns a copy of n with other children.
func (n *node) with(left, right *node) *node {
	c := &node{left: left, right: right, chunk: n.chunk, own: n.own, prio: n.prio}
	c.sum = left.metrics().add(c.own).add(right.metrics())
	return c
}

// merge concatenates two ropes.
func merge(a, b *node) *node {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio >= b.prio:
		return a.with(a.left, merge(a.right, b))
	default:
		return b.with(merge(a, b.left), b.right)
	}
}

// splitEnd splits t between chunks: those ending at or before off go left,
// so the chunk holding byte off goes right.
func splitEnd(t *node, off int) (*node, *node) {
	if t == nil {
		return nil, nil
	}
	lb := t.left.size()
	if off < lb+len(t.chunk) {
		l, r := splitEnd(t.left, off)
		return l, t.with(r, t.right)
	}
	l, r := splitEnd(t.right, off-lb-len(t.chunk))
	return t.with(t.left, l), r
}

// splitStart splits t between chunks: those starting before off go left,
// so the chunk holding byte off-1 goes left.
func splitStart(t *node, off int) (*node, *node) {
	if t == nil {
		return nil, nil
	}
	lb := t.left.size()
	if off <= lb {
		l, r := splitStart(t.left, off)
		return l, t.with(r, t.right)
	}
	l, r := splitStart(t.right, off-lb-len(t.chunk))
	return t.with(t.left, l), r
}

// appendRange appends bytes [from, to) of t to dst.
func appendRange(dst []byte, t *node, from, to int) []byte {
	for t != nil {
		from, to = max(from, 0), min(to, t.size())
		if from >= to {
			break
		}
		lb := t.left.size()
		if from < lb {
			dst = appendRange(dst, t.left, from, to)
		}
		if cs, ce := max(from-lb, 0), min(to-lb, len(t.chunk)); cs < ce {
			dst = append(dst, t.chunk[cs:ce]...)
		}
		// The right subtree iteratively, in its own coordinates.
		from, to = from-lb-len(t.chunk), to-lb-len(t.chunk)
		t = t.right
	}
	return dst
}

// build makes a rope of b, cutting it into chunks that alias b: b must
// never be modified afterwards.
func (c chunking) build(b []byte) *node {
	if len(b) == 0 {
		return nil
	}
	if len(b) <= c.max {
		return leaf(b)
	}
	// Equal pieces of at most max-maxCutShift bytes, each cut then moved
	// back to a legal position, so no piece exceeds max and none falls
	// below (max-maxCutShift)/2-maxCutShift, which is at least min.
	n := (len(b) + c.max - maxCutShift - 1) / (c.max - maxCutShift)
	var stack []*node // the right spine of the treap built so far
	start := 0
	for i := 1; i <= n; i++ {
		end := len(b)
		if i < n {
			end = cutBefore(b, len(b)*i/n)
		}
		stack = push(stack, leaf(b[start:end:end]))
		start = end
	}
	return fixSums(stack[0])
}

func leaf(chunk []byte) *node {
	m := measure(chunk)
	return &node{chunk: chunk, own: m, sum: m, prio: rand.Uint32()}
}

// push appends n (the next chunk in order) to the treap whose right spine
// is stack: the classic linear-time Cartesian tree construction. Sums are
// left stale for fixSums, since building mutates fresh nodes in place.
func push(stack []*node, n *node) []*node {
	var last *node
	for len(stack) > 0 && stack[len(stack)-1].prio < n.prio {
		last = stack[len(stack)-1]
		stack = stack[:len(stack)-1]
	}
	n.left = last
	if len(stack) > 0 {
		stack[len(stack)-1].right = n
	}
	return append(stack, n)
}

func fixSums(t *node) *node {
	if t != nil {
		fixSums(t.left)
		fixSums(t.right)
		t.sum = t.left.metrics().add(t.own).add(t.right.metrics())
	}
	return t
}

// replace returns t with bytes [s, e) replaced by text.
func (c chunking) replace(t *node, s, e int, text string) *node {
	if r := c.replaceInChunk(t, t.size(), 0, s, e, text); r != nil {
		return r
	}
	// General case: take out the chunks that hold [s-context, e+context),
	// rewrite their bytes as x and put x back as fresh chunks. x keeps at
	// least context unchanged bytes on each side (unless it reaches the end
	// of the text), so the boundaries it meets stay legal.
	a, rest := splitEnd(t, s-context)
	base := a.size()
	m, z := splitStart(rest, e+context-base)
	x := make([]byte, 0, m.size()-(e-s)+len(text))
	x = appendRange(x, m, 0, s-base)
	x = append(x, text...)
	x = appendRange(x, m, e-base, m.size())
	// Absorb whole neighbouring chunks until x is big enough to be a chunk
	// of its own; they bring their own legal boundaries.
	for len(x) < c.min && (a != nil || z != nil) {
		if a != nil {
			var last *node
			a, last = splitEnd(a, a.size()-1)
			x = append(appendRange(make([]byte, 0, last.size()+len(x)), last, 0, last.size()), x...)
		} else {
			var first *node
			first, z = splitStart(z, 1)
			x = appendRange(x, first, 0, first.size())
		}
	}
	return merge(merge(a, c.build(x)), z)
}

// replaceInChunk is the fast path of replace, for an edit that stays at
// least context bytes inside one chunk (or anywhere in a lone chunk) and
// leaves it within the size bounds: one new chunk and a copied path. It
// returns nil when the edit does not qualify. total is the size of the
// whole rope, base the offset of t in it.
func (c chunking) replaceInChunk(t *node, total, base, s, e int, text string) *node {
	if t == nil {
		return nil
	}
	lb := t.left.size()
	if s < lb {
		l := c.replaceInChunk(t.left, total, base, s, e, text)
		if l == nil {
			return nil
		}
		return t.with(l, t.right)
	}
	ce := lb + len(t.chunk)
	if s >= ce && t.right != nil {
		r := c.replaceInChunk(t.right, total, base+ce, s-ce, e-ce, text)
		if r == nil {
			return nil
		}
		return t.with(t.left, r)
	}
	ls, le := s-lb, e-lb
	n := len(t.chunk) - (le - ls) + len(text)
	alone := len(t.chunk) == total
	if le > len(t.chunk) || n > c.max || n == 0 || (!alone && n < c.min) {
		return nil
	}
	if first := base+lb == 0; !first && ls < context {
		return nil
	}
	if last := base+ce == total; !last && len(t.chunk)-le < context {
		return nil
	}
	chunk := make([]byte, n)
	copy(chunk, t.chunk[:ls])
	copy(chunk[ls:], text)
	copy(chunk[ls+len(text):], t.chunk[le:])
	r := &node{left: t.left, right: t.right, chunk: chunk, own: measure(chunk), prio: t.prio}
	r.sum = t.left.metrics().add(r.own).add(t.right.metrics())
	return r
}

// flatten returns the text of t as one slice. A lone chunk is returned as
// is (capacity trimmed so an append by a caller cannot write into it).
func flatten(t *node) []byte {
	switch {
	case t == nil:
		return []byte{}
	case t.left == nil && t.right == nil:
		return t.chunk[:len(t.chunk):len(t.chunk)]
	}
	return appendRange(make([]byte, 0, t.size()), t, 0, t.size())
}

// rebase returns a copy of t whose chunks alias flat, t's text: once a
// snapshot's flat copy exists, the rope stops pinning the older chunk
// arrays, so a buffer holds its text about once, not twice.
func rebase(t *node, flat []byte, base int) *node {
	if t == nil {
		return nil
	}
	lb := t.left.size()
	cs, ce := base+lb, base+lb+len(t.chunk)
	return &node{
		left:  rebase(t.left, flat, base),
		right: rebase(t.right, flat, ce),
		chunk: flat[cs:ce:ce],
		own:   t.own,
		sum:   t.sum,
		prio:  t.prio,
	}
}
