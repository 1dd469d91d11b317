package overlay

import (
	"regexp"
	"strings"
	"testing"
)

// ValidDraftName accepts exactly what the regexp it replaced did.
func TestValidDraftName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	names := []string{"", "a", "A", "0", "main", "x.y_z-1", ".a", "_a", "-a", "a b", "a/b", "é", "a\x00",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65), "a" + strings.Repeat("-", 63), "a\n"}
	for c := 0; c < 256; c++ {
		names = append(names, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := ValidDraftName(n), re.MatchString(n); got != want {
			t.Errorf("ValidDraftName(%q) = %v, the regexp says %v", n, got, want)
		}
	}
}
