//go:build linux

package main

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/draftfs/draftfs/cmd/draftfs/internal/prestart"
)

// TestPrestartKnowsGlobalFlags: prestart reads the command from the
// command line before cobra does; it must know which global flags take
// the next argument as their value.
func TestPrestartKnowsGlobalFlags(t *testing.T) {
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		takesNext := fl.NoOptDefVal == "" // a bool flag's is "true"
		if known := slices.Contains(prestart.ValueFlags, "--"+fl.Name); known != takesNext {
			t.Errorf("--%s takes the next argument: %v; prestart.ValueFlags says %v", fl.Name, takesNext, known)
		}
		if fl.Shorthand != "" {
			t.Errorf("--%s has a shorthand, -%s, which prestart does not know", fl.Name, fl.Shorthand)
		}
	})
}
