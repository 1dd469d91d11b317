package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// DefaultMaxFileSize is the largest file a tool reads whole (text, media,
// edits, appends, content search) unless Options.MaxFileSize says
// otherwise.
const DefaultMaxFileSize = 10 << 20

// MaxMessageSize bounds one message from the client on stdio (RunStdio):
// a bigger one is answered with an error and skipped. It is well
// above what the tools read whole, so a write may be larger than a read.
const MaxMessageSize = 64 << 20

// rootsTimeout bounds the wait for the client's answer to roots/list.
const rootsTimeout = 30 * time.Second

// Options configure a Server.
type Options struct {
	// Dirs are the allowed directories, absolute or relative to the
	// current directory; none means the workspace root. Directories must
	// lie inside the workspace; one that contains it stands for the whole
	// workspace.
	Dirs []string
	// MaxFileSize bounds the files tools read whole; 0 means
	// DefaultMaxFileSize.
	MaxFileSize int64
	// Version is reported as the server's version.
	Version string
	// Log receives the notices the reference server prints on stderr
	// (roots taken from the client, directories skipped); nil discards
	// them.
	Log io.Writer
	// Step, when set, makes each call of a tool that writes one step of
	// the draft's timeline by the client (its clientInfo name): it is
	// called as the call begins and what it returns as it ends.
	Step func(client, label string) (end func())
	// Fatal, when set, is called once the answer to a tool call whose
	// handler panicked has been sent (a bug; see bug.go): draftfs mcp
	// exits. Without it the server answers and serves on.
	Fatal func(err error)
}

// Server serves the merged view of one draft as MCP tools and resources.
// It serves one client connection at a time (Run).
type Server struct {
	// Set by New, read only after.
	f     agent.Files
	root  string // workspace root, as Files reports it
	max   int64
	log   io.Writer
	step  func(client, label string) func()
	sdk   *sdk.Server
	tools map[string]*tool
	// aliases are other names of directories of the view: the root's real
	// path, allowed directories given through symlinks.
	aliases []alias

	// writeMu serialises the tools that change the view, so that two
	// edits of one file cannot interleave their read and write.
	writeMu sync.Mutex

	mu sync.RWMutex // mu protects the following
	// dirs are the allowed directories: absolute, clean, inside the
	// workspace.
	dirs []string
	// rootsDone is closed when no update from the client's roots is
	// pending; tool calls wait for it.
	rootsDone chan struct{}

	subs subscriptions
	// large holds what the stdio transport took out of messages.
	large *largeArgs
	bugs  bugs
}

// New returns a server over f.
func New(f agent.Files, opts Options) (*Server, error) {
	s := &Server{
		f:         f,
		root:      filepath.Clean(f.Root()),
		max:       opts.MaxFileSize,
		log:       opts.Log,
		step:      opts.Step,
		rootsDone: closedChan(),
		large:     newLargeArgs(),
		bugs:      bugs{fatal: opts.Fatal},
	}
	if s.max <= 0 {
		s.max = DefaultMaxFileSize
	}
	if s.log == nil {
		s.log = io.Discard
	}
	if real, err := filepath.EvalSymlinks(s.root); err == nil && real != s.root {
		s.aliases = append(s.aliases, alias{from: real, to: s.root})
	}
	s.subs.init()
	dirs := opts.Dirs
	if len(dirs) == 0 {
		dirs = []string{s.root}
	}
	for _, d := range dirs {
		abs, err := filepath.Abs(expandHome(d))
		if err != nil {
			return nil, fmt.Errorf("mcp: allowed directory %q: %w", d, err)
		}
		if ok := s.addDir(abs, true); !ok {
			fmt.Fprintf(s.log, "Warning: %s is not a directory inside the workspace %s, skipping\n", abs, s.root)
		}
	}
	if len(s.dirs) == 0 {
		return nil, fmt.Errorf("mcp: none of the allowed directories %s is a directory inside the workspace %s", strings.Join(dirs, ", "), s.root)
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "draftfs", Title: "draftfs: the merged view of the workspace", Version: opts.Version}, &sdk.ServerOptions{
		Instructions:            instructions,
		InitializedHandler:      s.initialized,
		RootsListChangedHandler: s.rootsChanged,
		SubscribeHandler:        s.subscribe,
		UnsubscribeHandler:      s.unsubscribe,
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{Subscribe: true},
		},
	})
	s.tools = map[string]*tool{}
	for _, t := range toolList() {
		s.tools[t.name] = t
		s.sdk.AddTool(t.sdkTool(), s.handler(t))
	}
	s.sdk.AddReceivingMiddleware(s.unknownTools)
	s.addResources()
	return s, nil
}

const instructions = `This server reads and writes the user's workspace through draftfs: reads show the files as the user sees them, unsaved editor changes included; every write, edit, move and delete lands in a draft that the user reviews and commits. Nothing reaches the disk until the user commits. draft_status and draft_diff show your changes so far; restore_file drops them for a path.`

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Run serves one client on t until it disconnects or ctx is done, sending
// notifications/resources/updated for subscribed files as the merged view
// changes.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	stop := s.watch()
	defer stop()
	return s.sdk.Run(ctx, bugTransport{t, &s.bugs})
}

// RunStdio is Run on stdin and stdout, with messages up to
// MaxMessageSize.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.Run(ctx, &stdioTransport{r: os.Stdin, w: os.Stdout, max: MaxMessageSize, large: s.large})
}

// allowedDirs is a snapshot of the allowed directories.
func (s *Server) allowedDirs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.dirs...)
}

// alias says that paths below from are the view's paths below to.
type alias struct{ from, to string }

// unalias rewrites a path given through an alias.
func (s *Server) unalias(abs string) string {
	for _, a := range s.aliases {
		if beneath.Within(abs, a.from) {
			return a.to + strings.TrimPrefix(abs, a.from)
		}
	}
	return abs
}

// dirFor checks a requested allowed directory against the workspace: it
// returns the directories (as given, and with symlinks resolved) to
// allow, or nil if it is not a directory of the view. One that contains
// the workspace stands for the root.
func (s *Server) dirFor(abs string) []string {
	abs = s.unalias(abs)
	if beneath.Within(s.root, abs) {
		return []string{s.root}
	}
	if !beneath.Within(abs, s.root) {
		return nil
	}
	key, err := s.f.Resolve(abs)
	if err != nil {
		return nil
	}
	if info, err := s.f.Stat(key); err != nil || !info.IsDir() {
		return nil
	}
	if real := s.absOf(key); real != abs {
		return []string{abs, real}
	}
	return []string{abs}
}

// addDir adds an allowed directory at startup. A directory reached
// through a symlink from outside the workspace is allowed under both
// names, as the reference allows both, when aliased is set.
func (s *Server) addDir(abs string, aliased bool) bool {
	ds := s.dirFor(abs)
	if ds == nil && aliased {
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			if ds = s.dirFor(real); ds != nil {
				s.aliases = append(s.aliases, alias{from: abs, to: real})
				ds = append([]string{abs}, ds...)
			}
		}
	}
	for _, d := range ds {
		if !slices.Contains(s.dirs, d) {
			s.dirs = append(s.dirs, d)
		}
	}
	return ds != nil
}

// initialized takes the allowed directories from the client's roots when
// it has them, as the reference does after initialization.
func (s *Server) initialized(_ context.Context, req *sdk.InitializedRequest) {
	p := req.Session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
		fmt.Fprintf(s.log, "Client does not support MCP Roots, using allowed directories set from server args: %s\n", strings.Join(s.allowedDirs(), ", "))
		return
	}
	s.refreshRoots(req.Session)
}

// rootsChanged replaces the allowed directories with the client's new
// roots.
func (s *Server) rootsChanged(_ context.Context, req *sdk.RootsListChangedRequest) {
	s.refreshRoots(req.Session)
}

// refreshRoots asks the client for its roots and replaces the allowed
// directories with them. Tool calls that arrive meanwhile wait, so a call
// made after a roots change sees the new roots. It runs the request in
// its own goroutine: notification handlers run on the connection's
// reading goroutine, which must stay free to receive the answer.
func (s *Server) refreshRoots(ss *sdk.ServerSession) {
	done := make(chan struct{})
	s.mu.Lock()
	s.rootsDone = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), rootsTimeout)
		defer cancel()
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			fmt.Fprintf(s.log, "Failed to request roots from client: %v\n", err)
			return
		}
		s.setRoots(res.Roots)
	}()
}

// setRoots replaces the allowed directories with the roots that are
// directories of the view; when none is, the current ones stay.
func (s *Server) setRoots(roots []*sdk.Root) {
	var dirs []string
	for _, r := range roots {
		p, err := pathOfURI(r.URI)
		if err != nil {
			fmt.Fprintf(s.log, "Skipping invalid path or inaccessible: %s\n", r.URI)
			continue
		}
		abs, err := filepath.Abs(expandHome(p))
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		ds := s.dirFor(abs)
		if ds == nil {
			fmt.Fprintf(s.log, "Skipping root that is not a directory inside the workspace %s: %s\n", s.root, r.URI)
		}
		for _, d := range ds {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) == 0 {
		fmt.Fprintf(s.log, "No valid root directories provided by client\n")
		return
	}
	s.mu.Lock()
	s.dirs = dirs
	s.mu.Unlock()
	fmt.Fprintf(s.log, "Updated allowed directories from MCP roots: %d valid directories\n", len(dirs))
}

// waitRoots waits until no roots update is pending.
func (s *Server) waitRoots(ctx context.Context) error {
	s.mu.RLock()
	done := s.rootsDone
	s.mu.RUnlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unknownTools answers a call of a tool that does not exist with a tool
// error, as the reference does, rather than a protocol error.
func (s *Server) unknownTools(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "tools/call" {
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && s.tools[p.Name] == nil {
				return errorResult(fmt.Sprintf("MCP error -32602: Tool %s not found", p.Name)), nil
			}
		}
		return next(ctx, method, req)
	}
}

// handler runs a tool: arguments checked, roots settled, changes
// serialised, errors turned into tool errors so that bad input never
// ends the server, and a panic (a bug) answered as one too (see bug.go).
func (s *Server) handler(t *tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = s.caught(t.name, r), nil
			}
		}()
		if err := s.waitRoots(ctx); err != nil {
			return nil, err
		}
		a, err := parseArgs(t.name, t.props, req.Params.Arguments)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		s.large.restore(a)
		// Parsed: the raw copy of the arguments can go.
		req.Params.Arguments = nil
		if t.writes {
			s.writeMu.Lock()
			defer s.writeMu.Unlock()
			if s.step != nil {
				defer s.step(clientName(req.Session), "tools/call "+t.name)()
			}
		}
		r, err := t.run(s, ctx, a)
		if err != nil {
			var te *toolError
			if !errors.As(err, &te) && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return errorResult(err.Error()), nil
		}
		return r.sdkResult(), nil
	}
}

// clientName is the name an MCP client gave in initialize.
func clientName(ss *sdk.ServerSession) string {
	if ss == nil {
		return ""
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		return p.ClientInfo.Name
	}
	return ""
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}
