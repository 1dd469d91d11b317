//go:build linux

package nodes

import (
	"slices"
	"strings"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// Paths in go-fuse's tree: keys are slash-separated paths below the
// root, "" being the root.

// Path is in's path in go-fuse's tree. A lookup that puts another node
// at a name leaves the node there believing it is still the name's
// (go-fuse does not take the name from it): such a name counts as lost.
func Path(in *gofs.Inode) (string, bool) {
	root := in.Root()
	var buf [16]string // a path's names, in reverse, off the heap
	elems := buf[:0]
	for in != root {
		name, parent := in.Parent()
		if parent == nil {
			return "", false
		}
		if parent.GetChild(name) != in {
			return "", false // another node took the name
		}
		elems = append(elems, name)
		in = parent
	}
	slices.Reverse(elems)
	return strings.Join(elems, "/"), true
}

// At returns the node go-fuse holds for key below root, nil when the
// kernel never looked it up or forgot it.
func At(root *gofs.Inode, key string) *gofs.Inode {
	if key == "" {
		return root
	}
	p, rest := Deepest(root, key)
	return p.GetChild(rest) // nil when rest is not one element
}

// Deepest returns the node of key's deepest ancestor go-fuse holds
// below root, and the rest of key below it.
func Deepest(root *gofs.Inode, key string) (*gofs.Inode, string) {
	in := root
	for {
		elem, rest, more := strings.Cut(key, "/")
		if !more {
			return in, key
		}
		child := in.GetChild(elem)
		if child == nil {
			return in, key
		}
		in, key = child, rest
	}
}

// Split splits key into its parent's key and its last element.
func Split(key string) (parent, name string) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}
