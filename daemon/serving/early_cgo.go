//go:build linux && cgo

package serving

/*
#include <string.h>
#include <sys/prctl.h>

#define DRAFTFS_SLACK_NS 1000000L

// draftfs_slack_was is the timer slack the process started with, where
// draftfs_raise_slack raised it; -1 where it did not.
static long draftfs_slack_was = -1;

// draftfs_raise_slack runs before Go's runtime starts (a constructor),
// so every thread Go makes inherits the slack it sets. It does what
// RaiseSlack's exec does, under the same conditions.
__attribute__((constructor)) static void draftfs_raise_slack(int argc, char **argv, char **envp) {
	for (char **e = envp; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, "DRAFTFS_TIMERSLACK=", 19) == 0) {
			return;
		}
	}
	long was = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (was < 0 || was >= DRAFTFS_SLACK_NS) {
		return;
	}
	if (prctl(PR_SET_TIMERSLACK, DRAFTFS_SLACK_NS, 0, 0, 0) == 0) {
		draftfs_slack_was = was;
	}
}

static long draftfs_early_slack(void) { return draftfs_slack_was; }
*/
import "C"

import (
	"os"
	"strconv"
)

// The constructor's slack is Slack: either difference negative fails
// the build.
var (
	_ [C.DRAFTFS_SLACK_NS - int64(Slack)]struct{}
	_ [int64(Slack) - C.DRAFTFS_SLACK_NS]struct{}
)

// In a build with cgo the slack is raised before Go starts its threads
// (see the constructor above), which spares the exec RaiseSlack would
// make; what it was goes into the environment as RaiseSlack's exec
// would have it, for RestoreSlack, and so that RaiseSlack does nothing.
func init() {
	if was := C.draftfs_early_slack(); was >= 0 {
		os.Setenv(EnvSlack, strconv.FormatInt(int64(was), 10))
	}
}
