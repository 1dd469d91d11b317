package control

// Lock order: Server.mu, then nothing: it is never held while sending.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Draft is the draft of requests that name none, and of buffer paths'
	// symlink resolution. "": overlay.DefaultDraft.
	Draft string
	// Version is the daemon's, in initialize's serverInfo.
	Version string
	// Mountpoint returns where the merged view of a draft is mounted, ""
	// when it is not. Nil: never.
	Mountpoint func(draft string) string
	// Mount mounts the merged view of a draft that is not mounted and
	// returns where (draft/mount). Nil: the method fails.
	Mount func(draft string) (string, error)
	// Daemon: the server is a daemon's (not a command's own, for one
	// request), so draft/list names its process as the default draft's
	// user.
	Daemon bool
	// Run says that the processes process pid starts, and theirs, make
	// their changes through the mounts as command until end (a step's
	// Run). Nil: a step's Run is ignored.
	Run func(pid int, command []string) (end func())
	// Who names the peer process pid (its command line): changes a
	// client that sent no initialize makes through the review methods
	// (commit, discard, undo, rewind) are logged as by it. Nil: not named.
	Who func(pid int) string
	// Heavy is called as a request that works in proportion to the
	// draft (commit, discard, undo, rewind) starts, with the method's
	// name, and what it returns as the request ends; and as a burst of
	// changes (writes through a mount) starts, with BurstOfChanges, and
	// what it returns once none came for a second. The daemon lifts its
	// soft memory limit meanwhile. Nil: nothing.
	Heavy func(what string) (end func())
	// Fatal is called, once its request is answered, when a handler
	// panicked: a bug, which may have left the engine's locks held and
	// its maps half changed, so that every later request through the
	// socket or the mounts would wait forever. A daemon stops there (a
	// draft's journal is recovered at its next open: nothing written is
	// lost). Nil: the server carries on.
	Fatal func(err error)
	// Logf reports what the daemon's user should know about: refused
	// peers, dropped clients, failed notifications. Nil: discarded.
	Logf func(format string, args ...any)
}

// BurstOfChanges is what ServerOptions.Heavy is called with for a burst
// of changes.
const BurstOfChanges = "changes"

// Server answers the control protocol for one workspace on any number
// of connections.
type Server struct {
	ws   *overlay.Workspace // read only
	opts ServerOptions      // read only
	sub  *overlay.Subscription
	uid  int // read only: the only user whose connections are served

	ctx    context.Context // done when the server closes
	cancel context.CancelFunc
	// wg counts connection goroutines, handlers and the fan-out; Add is
	// called with mu held and closed false, so never after Close began.
	wg sync.WaitGroup

	mu        sync.Mutex // protects the following
	conns     map[*conn]struct{}
	owners    map[string]*conn // the editor owning each buffer (see conn.own)
	listeners []net.Listener
	closed    bool
}

// NewServer returns a server over ws; it receives the workspace's
// change feed until Close.
func NewServer(ws *overlay.Workspace, opts ServerOptions) *Server {
	if opts.Draft == "" {
		opts.Draft = overlay.DefaultDraft
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		ws: ws, opts: opts, sub: ws.Subscribe(), uid: os.Getuid(),
		ctx: ctx, cancel: cancel, conns: map[*conn]struct{}{},
	}
	s.wg.Add(1)
	go s.fanOut()
	return s
}

// Serve accepts connections on l until l fails or the server closes.
// Peers of another user are refused. It returns nil after Close.
func (s *Server) Serve(l *net.UnixListener) error { return s.serve(l, false) }

// ServeAgents is Serve for the agent socket, the only one reachable
// inside draftfs run and acp: its connections may read the draft and
// write to it as the mount does, but the user's methods (commit,
// discard, undo, buffers, mounts) are refused.
func (s *Server) ServeAgents(l *net.UnixListener) error { return s.serve(l, true) }

func (s *Server) serve(l *net.UnixListener, agents bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors, say: wait for some to be freed.
			s.opts.Logf("control: accept: %v", err)
			time.Sleep(acceptRetry)
			continue
		}
		cred, err := peerCred(c)
		if err != nil || int(cred.Uid) != s.uid {
			who := "unknown user"
			if err == nil {
				who = fmt.Sprintf("uid %d (pid %d)", cred.Uid, cred.Pid)
			}
			s.opts.Logf("control: refused a connection from %s: only uid %d may use this daemon", who, s.uid)
			st := newStream(c, MaxMessage, true)
			st.reject(nil, CodeRefused, fmt.Sprintf("connection refused: this draftfs daemon serves uid %d only", s.uid))
			c.Close()
			continue
		}
		s.serveConn(c, int(cred.Pid), agents)
	}
}

// ServeConn serves one connection, already trusted, until it or the
// server closes. It returns at once.
func (s *Server) ServeConn(rwc io.ReadWriteCloser) { s.serveConn(rwc, os.Getpid(), false) }

// serveConn is ServeConn for a peer process known by pid; agent: the
// connection came through the agent socket.
func (s *Server) serveConn(rwc io.ReadWriteCloser, pid int, agent bool) {
	cn := &conn{
		agent: agent,
		s:     s,
		pid:   pid,
		done:  make(chan struct{}),
		queue: make(chan notice, noticeQueue),
		sem:   make(chan struct{}, maxAsync),
		ready: make(chan struct{}),
		enc:   buffers.UTF16,
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		rwc.Close()
		return
	}
	s.conns[cn] = struct{}{}
	s.wg.Add(2) // the goroutines below
	s.mu.Unlock()
	cn.st = newStream(rwc, MaxMessage, true)
	cn.st.writeTimeout = writeTimeout
	cn.rpc = jsonrpc2.NewConn(s.ctx, cn.st, cn, jsonrpc2.SetLogger(logger{s.opts.Logf}))
	close(cn.ready)
	go func() {
		defer s.wg.Done()
		<-cn.rpc.DisconnectNotify()
		cn.closeOwned()
		cn.steps.endAll()
		close(cn.done)
		s.mu.Lock()
		delete(s.conns, cn)
		s.mu.Unlock()
	}()
	go cn.sendNotices()
}

// track counts a goroutine Close must wait for; false when the server
// is closing and the goroutine must not start.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// Close stops accepting, closes every connection, waits for running
// handlers and stops following the change feed. The workspace stays
// open: it is the caller's.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ls := s.listeners
	conns := make([]*conn, 0, len(s.conns))
	for cn := range s.conns {
		conns = append(conns, cn)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, cn := range conns {
		<-cn.ready // ServeConn may still be setting it up
		cn.rpc.Close()
	}
	s.cancel()
	s.sub.Close()
	s.wg.Wait()
	return nil
}

// logger adapts Logf for jsonrpc2's own messages.
type logger struct{ logf func(string, ...any) }

func (l logger) Printf(format string, args ...any) { l.logf(format, args...) }

const (
	// noticeQueue is how many notifications a client may fall behind by
	// before they are replaced by one that says some were lost.
	noticeQueue = 1024
	// maxAsync bounds the requests one connection has running at once;
	// more wait, and the connection's reading with them.
	maxAsync = 8
	// writeTimeout: a client that takes longer to accept one message is
	// taken for dead and disconnected.
	writeTimeout = time.Minute
	// acceptRetry is the pause after a failed accept.
	acceptRetry = 100 * time.Millisecond
)

// notice is a notification waiting to be sent.
type notice struct {
	method string
	params any
}

// conn is one client connection.
type conn struct {
	s     *Server
	rpc   *jsonrpc2.Conn // set before ready is closed
	st    *stream        // read only
	ready chan struct{}
	done  chan struct{} // closed when the connection has ended
	sem   chan struct{} // slots for unordered handlers

	// queue holds notifications for sendNotices; only Server.fanOut sends
	// on it, with Server.mu held.
	queue      chan notice
	subscribed atomic.Bool

	// enc is the negotiated position encoding: written by initialize and
	// read by the buffer methods, all ordered handlers, which run one at
	// a time on the connection's reading goroutine.
	enc buffers.Encoding

	pid int // read only: the peer process, 0 when unknown

	// who names the peer (ServerOptions.Who), once asked.
	whoOnce sync.Once
	who     string

	usesMu sync.Mutex      // protects the following
	client string          // the clientInfo name of initialize
	uses   map[string]bool // the drafts it worked in through fs/*

	// editor: the client sent initialize. An editor owns the buffers it
	// last opened or changed: when its connection ends they close, since
	// its unsaved text is gone with it. Buffers opened by plain scripts
	// (`draftfs buffer open`) stay until closed.
	editor atomic.Bool
	// pushed: the editor pushed buffers, so it is an editor, not one of
	// draftfs's own front ends (which initialize too).
	pushed atomic.Bool

	// agent: the connection came through the agent socket (read only).
	agent bool

	// steps are the timeline steps the connection began.
	steps steps
}

// author is src naming who on cn made a change through a review method:
// an editor (a client that pushed buffers) as the editor when the
// request named no source (unnamed); a client that sent initialize by
// its clientInfo name; any other (a draftfs command) by its peer's
// command line.
func (cn *conn) author(src overlay.Source, unnamed bool) overlay.Source {
	if cn.pushed.Load() && unnamed {
		src = overlay.SourceEditor
	}
	cn.usesMu.Lock()
	client := cn.client
	cn.usesMu.Unlock()
	if client != "" {
		return src.By(client)
	}
	if cn.s.opts.Who == nil || cn.pid <= 0 {
		return src
	}
	cn.whoOnce.Do(func() { cn.who = cn.s.opts.Who(cn.pid) })
	return src.By(cn.who)
}

// own makes cn, when an editor, the owner of the buffer at key (open),
// or drops ownership as the buffer closes.
func (cn *conn) own(key string, open bool) {
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !open:
		delete(s.owners, key)
	case cn.editor.Load():
		cn.pushed.Store(true)
		if s.owners == nil {
			s.owners = map[string]*conn{}
		}
		s.owners[key] = cn
	default:
		delete(s.owners, key) // a script took it over: it stays
	}
}

// closeOwned closes the buffers an editor whose connection ended owns.
func (cn *conn) closeOwned() {
	s := cn.s
	var keys []string
	s.mu.Lock()
	for key, owner := range s.owners {
		if owner == cn {
			keys = append(keys, key)
			delete(s.owners, key)
		}
	}
	s.mu.Unlock()
	for _, key := range keys {
		s.ws.Buffers().Close(key)
	}
}
