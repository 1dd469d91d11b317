// Package textmerge computes what `draftfs diff` shows and what
// `draftfs commit` writes when the user changed a file the draft also
// changed: git-style unified diffs ([Unified], [Stat]) and a line-wise
// three-way merge ([Merge]).
//
// Everything works on raw bytes. A line is the bytes up to and including
// "\n"; a "\r" before it is part of the line, and the last line may have
// no ending. Nothing is decoded, normalised or re-encoded, so CRLF files,
// a missing final newline and invalid UTF-8 survive a clean merge byte for
// byte. Content with a NUL byte in its first 8000 bytes is binary, as git
// decides it ([IsBinary]).
//
// # Libraries
//
// Line diffs come from znkr.io/diff (its textdiff package): Myers'
// algorithm with preprocessing and heuristics that keep it fast on large
// inputs while staying (near-)minimal, a stable v1 API, maintained, and no
// dependencies outside the standard library in what it compiles. It also
// implements the indent heuristic git applies by default, so a block
// inserted next to lines it repeats is shown the way git shows it.
//
// github.com/aymanbagabas/go-udiff (a copy of gopls' internal diff) was
// evaluated first and rejected: its line diff gives up after 50 edit steps
// (a fixed internal limit) and replaces everything after that point. In a
// 2000-line file with 200 one-line changes it reports 51 hunks that add
// about 1,540 lines. That makes diffs unreadable and would turn
// independent edits into false merge conflicts.
//
// The three-way merge is written here (merge.go), on top of znkr.io/diff's
// hunks. The Go diff3 libraries were evaluated and rejected:
// github.com/epiclabs-io/diff3 (a port of node-diff3, updated in 2026)
// makes hunks that merely touch one conflict, which the rules below must
// not; its reader-based Merge reads lines with bufio.Scanner, which drops
// "\r" and whether the file ended in a newline, and writes nine-character
// markers without a base section; its default LCS is Hunt–McIlroy, which
// is quadratic on files with many equal lines. github.com/nasdf/diff3
// returns only a string, without saying whether it conflicted, and diffs
// through diffmatchpatch's rune-per-line encoding.
//
// # Diff format
//
// [Unified] matches `git diff --no-index` from the "---" line on: labels
// a/<path> and b/<path> (or /dev/null) quoted like git's, three lines of
// context, hunks less than seven unchanged lines apart joined, counts of 1
// left out, git's default function name after "@@", "\ No newline at end
// of file", and "Binary files ... differ". Where the diff itself is
// ambiguous (repeated lines that can be matched more than one way), the
// hunks may differ from git's while being just as small.
//
// # Merge rules
//
// [Merge] diffs base against ours and against theirs and walks the hunks
// in base order, as diff3 does. Hunks of the two sides that share a base
// line, an insertion strictly inside the other side's range, and two
// insertions at the same place form one region. A region that only one
// side changed takes that side's lines; a region both changed merges
// cleanly only if both made the same change. Otherwise it is a conflict, written as `git merge-file -p --diff3 -L ours
// -L base -L theirs` writes it, CRLF markers included.
//
// Unlike git, changes to line ranges that only touch (one side edits line
// 3, the other line 4; or one inserts right where the other's range starts
// or ends) merge cleanly: the user's edit and the agent's edit are
// independent, and refusing a commit over them would be noise. When the
// diffs are unambiguous, the result and its conflict text are otherwise
// git's.
package textmerge
