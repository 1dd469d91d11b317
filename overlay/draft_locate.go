//go:build linux

package overlay

import (
	"syscall"
)

// where is a path resolved against the draft's metadata.
type where struct {
	e *entry // the draft entry at the path, nil when none
	// lower is the path to look up in the lower layers when hasLower.
	lower    string
	hasLower bool
}

// locate resolves key against the draft entries. ENOENT when a whiteout
// hides it, ENOTDIR when an ancestor is not a directory. Must be called
// with d.mu held.
func (d *Draft) locate(key string) (where, error) {
	var w where
	if e, ok := d.entries[key]; ok {
		if e.Kind == kindWhiteout {
			return w, pathErr("lookup", key, syscall.ENOENT)
		}
		w.e = e
		switch {
		case e.redirect():
			w.lower, w.hasLower = e.Origin, true
			return w, nil
		case e.Kind != kindDir:
			return w, nil
		case e.Opaque:
			return w, nil
		case e.Origin != "":
			w.lower, w.hasLower = e.Origin, true
			return w, nil
		}
	}
	// No redirect at key itself: the nearest ancestor entry decides.
	for q := key; q != ""; {
		q = parentOf(q)
		e, ok := d.entries[q]
		if !ok {
			continue
		}
		switch {
		case e.Kind == kindWhiteout:
			return w, pathErr("lookup", key, syscall.ENOENT)
		case e.Kind != kindDir && !e.redirect():
			return w, pathErr("lookup", key, syscall.ENOTDIR)
		case e.redirect():
			// A renamed non-directory cannot have children.
			return w, pathErr("lookup", key, syscall.ENOTDIR)
		case e.Opaque:
			if w.e == nil {
				return w, pathErr("lookup", key, syscall.ENOENT)
			}
			return w, nil
		case e.Origin != "":
			w.lower, w.hasLower = rebase(key, q, e.Origin), true
			return w, nil
		}
	}
	w.lower, w.hasLower = key, true
	return w, nil
}

// lowerPathOf is where key's content would be found in the lower layers,
// ignoring any entry at key itself: where a new draft entry at key takes
// its base from. ok is false when no lower content can show there.
// Must be called with d.mu held.
func (d *Draft) lowerPathOf(key string) (string, bool) {
	for q := key; q != ""; {
		q = parentOf(q)
		e, ok := d.entries[q]
		if !ok {
			continue
		}
		if e.Kind != kindDir || e.Opaque {
			return "", false
		}
		if e.Origin != "" {
			return rebase(key, q, e.Origin), true
		}
	}
	return key, true
}
