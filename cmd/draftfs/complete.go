package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
)

// Shell completion of arguments that name what the workspace holds.

// completeChanged offers the paths the draft changed.
func completeChanged(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	s, err := connect(readOnly)
	if err != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	defer s.close()
	st, err := s.Status(s.cfg.draft)
	if err != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	var out []string
	for _, e := range st {
		out = append(out, e.Path)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeBuffers offers the open buffers.
func completeBuffers(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	s, err := connectDaemon()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer s.close()
	list, err := s.Buffers()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, b := range list {
		out = append(out, b.Path)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeDrafts offers the workspace's drafts.
func completeDrafts(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if _, err := os.Stat(cfg.stateDir); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp // no state: no drafts, and none made
	}
	ws, err := overlay.Open(overlay.Options{Root: cfg.workspace, StateDir: cfg.stateDir})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer ws.Close()
	names, _ := ws.Drafts()
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeDirs offers directories.
func completeDirs(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}
