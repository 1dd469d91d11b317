//go:build linux

// Package prestart sets up a draftfs process whose command line says it
// serves a mount (draftfs mount, draftfs serve) before the program's
// other packages initialize. In a build without cgo serving.Setup execs
// the program again, and done here the first process skips the
// initialization of most of them (about 10 ms of a mount's start on the
// machine the README's figures come from); with cgo there is no exec
// (see package serving) and only the number of Ps is set here. The
// commands themselves still call serving.Setup, which does nothing the
// second time, and covers a command line this package misreads.
//
// It must stay light: it initializes before the packages its import
// path sorts ahead of, and only those it depends on initialize before
// it.
package prestart

import (
	"os"
	"slices"
	"strings"

	"github.com/draftfs/draftfs/daemon/serving"
)

// ValueFlags are draftfs's global flags that take the next argument as
// their value (the command's tests check this against the command).
var ValueFlags = []string{"--workspace", "--state", "--draft"}

// servingCommands serve a mount in their own process.
var servingCommands = []string{"mount", "serve"}

func init() {
	if slices.Contains(servingCommands, Command(os.Args[1:])) {
		serving.Setup()
	}
}

// Command is the command args name: their first argument that is
// neither a flag nor a global flag's value ("" for none).
func Command(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return ""
		case slices.Contains(ValueFlags, a):
			i++
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return ""
}
