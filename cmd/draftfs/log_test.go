package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// TestLogSteps: each log entry goes under the checkpoint whose state
// holds it (by the checkpoints' LogEnd), not the first made after its
// time: a write the mount finished after the step's checkpoint read the
// draft (a late release) is the next step's, as its content is.
func TestLogSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	entries := []overlay.LogEntry{
		{Time: at(1), Op: "write", Path: "a"},
		{Time: at(2), Op: "write", Path: "late"}, // logged after checkpoint 1 read the state
		{Time: at(4), Op: "write", Path: "b"},
		{Time: at(6), Op: "write", Path: "pending"},
	}
	cps := []overlay.Checkpoint{ // newest first
		{ID: 2, Time: at(5), LogEnd: 3},
		{ID: 1, Time: at(3), LogEnd: 1},
	}
	got := ""
	for _, st := range logSteps(cps, entries) {
		got += fmt.Sprint(st.ID, ":")
		for _, op := range st.Ops {
			got += " " + op.Path
		}
		got += "; "
	}
	if want := "0: pending; 2: late b; 1: a; "; got != want {
		t.Errorf("steps %q, want %q", got, want)
	}
	// Checkpoints made before LogEnd was recorded: by time.
	cps[0].LogEnd, cps[1].LogEnd = 0, 0
	got = ""
	for _, st := range logSteps(cps, entries) {
		got += fmt.Sprint(st.ID, ":", len(st.Ops), " ")
	}
	if want := "0:1 2:1 1:2 "; got != want {
		t.Errorf("steps without LogEnd %q, want %q", got, want)
	}
}
