// Package reference reproduces, byte for byte, what the reference MCP
// filesystem server (@modelcontextprotocol/server-filesystem) and the
// JavaScript libraries it calls compute: minimatch globs ([CompileGlob]),
// the npm diff package's unified diff ([UnifiedDiff]), edit_file's
// whitespace-tolerant matching ([ApplyEdits]), Node's UTF-8 decoding
// ([JSText]), sizes, dates and ICU collation.
//
// It exists because clients and prompts tuned for the reference read its
// exact text; package mcp answers with these functions, and each is
// tested against the reference's own code run by node (scripts/peers).
// Nothing here knows about drafts or MCP messages.
package reference
