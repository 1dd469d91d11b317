// Command mcpserver serves package mcp on stdio over an engine opened in
// this process, for the tests that drive it with real MCP clients while
// cmd/draftfs cannot be built. It opens buffers given with -buffer so
// tests can show unsaved editor text to the client.
//
//	mcpserver -workspace DIR -state DIR [-buffer KEY=FILE]... [ALLOWED_DIR...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/files"
	"github.com/draftfs/draftfs/protocol/mcp"
)

type bufferFlags []string

func (b *bufferFlags) String() string     { return strings.Join(*b, ",") }
func (b *bufferFlags) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	workspace := flag.String("workspace", ".", "workspace directory")
	state := flag.String("state", "", "state directory of the workspace")
	var bufs bufferFlags
	flag.Var(&bufs, "buffer", "KEY=FILE: open an editor buffer at KEY with FILE's text")
	flag.Parse()
	if err := run(*workspace, *state, bufs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

func run(workspace, state string, bufs []string, dirs []string) error {
	ws, err := overlay.Open(overlay.Options{Root: workspace, StateDir: state})
	if err != nil {
		return err
	}
	defer ws.Close()
	for _, b := range bufs {
		key, file, ok := strings.Cut(b, "=")
		if !ok {
			return fmt.Errorf("-buffer %q: want KEY=FILE", b)
		}
		text, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err := ws.Buffers().Open(key, 1, text); err != nil {
			return err
		}
	}
	d, err := ws.Draft("main")
	if err != nil {
		return err
	}
	s, err := mcp.New(files.NewLocal(d, overlay.SourceMCP), mcp.Options{Dirs: dirs, Version: "test", Log: os.Stderr})
	if err != nil {
		return err
	}
	return s.Run(context.Background(), &sdk.StdioTransport{})
}
