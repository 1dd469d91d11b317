package acp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/draftfs/draftfs/protocol/internal/lines"
	"github.com/sourcegraph/jsonrpc2"
)

// proxy routes messages between an editor and an agent; see the package
// doc. Two goroutines read, one per side, and handle each message before
// reading the next, so what each side sent reaches the other in order;
// the fs requests the proxy answers run on goroutines of their own,
// chained so they take effect in arrival order.
type proxy struct {
	opts      *Options
	editor    *lineWriter // to the editor
	agent     *lineWriter // to the agent
	fsPlain   *FS         // answers from the merged view
	fsThrough *FS         // asks the editor first
	idPrefix  string      // read only: the proxy's own request ids
	sessions  *sessions
	served    sync.WaitGroup // fs requests being answered

	mu         sync.Mutex                    // protects the following
	caps       editorCaps                    // what the editor advertised in initialize
	pending    map[string]*pendingRequest    // the editor's requests to the agent, by idKey
	serving    map[string]context.CancelFunc // the agent's fs requests being answered, by idKey
	asked      map[string]chan reply         // the proxy's requests to the editor, by idKey
	nextID     uint64
	lastServed chan struct{} // closed when the latest fs request is done
	editorGone bool
	agentName  string // from the agent's answer to initialize
}

// editorCaps is what the editor itself can do, before the proxy adds fs.
type editorCaps struct {
	readTextFile bool
	terminal     bool
}

// pendingRequest is an editor request the agent has not answered yet.
type pendingRequest struct {
	id     []byte // raw, as the editor sent it
	method string
	// For session/new, load, resume and fork: the session's directories,
	// and for load and resume the binding the request replaced.
	roots     []string
	sessionID string
	prev      *sessionInfo
	// endStep ends the timeline step of a session/prompt (Options.Step).
	endStep func()
}

// reply is the editor's answer to a request of the proxy.
type reply struct {
	result []byte
	err    []byte
}

var errEditorGone = errors.New("the editor closed the connection")

func newProxy(opts *Options, toEditor, toAgent io.Writer) *proxy {
	var nonce [4]byte
	rand.Read(nonce[:])
	p := &proxy{
		opts:       opts,
		editor:     newLineWriter(toEditor),
		agent:      newLineWriter(toAgent),
		idPrefix:   "draftfs-" + hex.EncodeToString(nonce[:]) + "-",
		sessions:   newSessions(opts),
		pending:    map[string]*pendingRequest{},
		serving:    map[string]context.CancelFunc{},
		asked:      map[string]chan reply{},
		lastServed: make(chan struct{}),
	}
	close(p.lastServed)
	p.fsPlain = &FS{Session: p.session}
	p.fsThrough = &FS{Session: p.session, ReadThrough: p.readThrough}
	return p
}

// readEditor handles the editor's messages until its stream ends.
func (p *proxy) readEditor(r io.Reader) {
	p.read(r, p.editor, p.fromEditor)
	p.mu.Lock()
	p.editorGone = true
	for k, ch := range p.asked {
		close(ch)
		delete(p.asked, k)
	}
	p.mu.Unlock()
}

// readAgent handles the agent's messages until its stream ends.
func (p *proxy) readAgent(r io.Reader) { p.read(r, p.agent, p.fromAgent) }

// read hands each line of r to handle; a line that is too long, or not
// JSON, is answered on back (its sender) and skipped.
func (p *proxy) read(r io.Reader, back *lineWriter, handle func([]byte, *message)) {
	lr := lines.NewReader(r, MaxMessage)
	for {
		line, err := lr.Next()
		if errors.Is(err, lines.ErrTooLong) {
			back.write(errorLine(nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest,
				Message: fmt.Sprintf("Invalid request: a message over %d MiB was skipped", MaxMessage>>20)}))
			continue
		}
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, ok := parseMessage(line)
		if !ok {
			back.write(errorLine(nil, &jsonrpc2.Error{Code: jsonrpc2.CodeParseError, Message: "Parse error: the line is not JSON"}))
			continue
		}
		handle(line, &m)
	}
}

// fromEditor routes one message of the editor.
func (p *proxy) fromEditor(line []byte, m *message) {
	switch {
	case m.isResponse():
		if p.answerAsked(m) {
			return
		}
	case m.isRequest():
		if m.method == MethodInitialize {
			line = p.initialize(line, m)
		}
		if err := p.allow(m); err != nil {
			p.editor.write(errorLine(m.id, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}))
			return
		}
		p.track(m)
	}
	p.agent.write(line)
}

// fromAgent routes one message of the agent.
func (p *proxy) fromAgent(line []byte, m *message) {
	switch {
	case m.isRequest() && (m.method == MethodReadTextFile || m.method == MethodWriteTextFile):
		p.serve(m)
		return
	case m.isRequest() && m.method == MethodTerminalCreate:
		var refused *jsonrpc2.Error
		if line, refused = p.terminal(line, m); refused != nil {
			p.agent.write(errorLine(m.id, refused))
			return
		}
	case m.isNotification() && m.method == MethodCancelRequest:
		if p.cancelServed(m.params) {
			return
		}
	case m.isResponse():
		p.settle(m)
	}
	p.editor.write(line)
}

// initialize records what the editor can do and returns the request
// with clientCapabilities.fs = {readTextFile: true, writeTextFile: true}
// (other members of fs and of clientCapabilities kept).
func (p *proxy) initialize(line []byte, m *message) []byte {
	if !isObject(m.params) {
		return line
	}
	caps, ok := member(m.params, "clientCapabilities")
	if !ok || !isObject(caps) {
		caps = []byte("{}")
	}
	fs, ok := member(caps, "fs")
	if !ok || !isObject(fs) {
		fs = []byte("{}")
	}
	read, _ := member(fs, "readTextFile")
	term, _ := member(caps, "terminal")
	p.mu.Lock()
	p.caps = editorCaps{readTextFile: isTrue(read), terminal: isTrue(term)}
	p.mu.Unlock()
	fs = setMember(fs, "readTextFile", []byte("true"))
	fs = setMember(fs, "writeTextFile", []byte("true"))
	caps = setMember(caps, "fs", fs)
	return setMember(line, "params", setMember(m.params, "clientCapabilities", caps))
}

// allow applies Options.Allow to a request that creates or loads a
// session.
func (p *proxy) allow(m *message) error {
	if p.opts.Allow == nil {
		return nil
	}
	switch m.method {
	case MethodSessionNew, MethodSessionFork, MethodSessionLoad, MethodSessionResume:
	default:
		return nil
	}
	var sp struct {
		Cwd                   string   `json:"cwd"`
		AdditionalDirectories []string `json:"additionalDirectories"`
	}
	json.Unmarshal(m.params, &sp)
	return p.opts.Allow(append([]string{sp.Cwd}, sp.AdditionalDirectories...))
}

// terminal returns a terminal/create request with its command wrapped so
// that it runs in the merged view of the session's workspace, when the
// editor can run terminals (else as it came: the editor refuses it).
// One it cannot wrap (no known session, no string command) is refused,
// never sent on: unwrapped, the command would run on the real disk.
func (p *proxy) terminal(line []byte, m *message) ([]byte, *jsonrpc2.Error) {
	p.mu.Lock()
	can := p.caps.terminal
	p.mu.Unlock()
	if p.opts.Terminal == nil || !can {
		return line, nil
	}
	if !isObject(m.params) {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "Invalid params: terminal/create needs an object with sessionId and command"}
	}
	var tp struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	json.Unmarshal(m.params, &tp)
	dir, draft, ok := p.sessions.workspaceOf(tp.SessionID, tp.Cwd, p.pendingCreations)
	if !ok {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: fmt.Sprintf("Invalid params: unknown sessionId %q: draftfs runs terminals only in the merged view of a session it knows", tp.SessionID)}
	}
	command, hasCommand := member(m.params, "command")
	if _, isString := jsonString(command); !hasCommand || !isString {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "Invalid params: terminal/create's command must be a string"}
	}
	args, _ := member(m.params, "args")
	name, prefix := p.opts.Terminal(dir, draft)
	wrapped := []byte{'['}
	for _, a := range prefix {
		wrapped = appendJSONString(wrapped, []byte(a))
		wrapped = append(wrapped, ',')
	}
	wrapped = append(wrapped, command...)
	for _, a := range elements(args) {
		wrapped = append(append(wrapped, ','), a...)
	}
	wrapped = append(wrapped, ']')
	params := setMember(m.params, "command", appendJSONString(nil, []byte(name)))
	params = setMember(params, "args", wrapped)
	return setMember(line, "params", params), nil
}

// errorLine is an error response; id nil means null (the id of a line
// that could not be read).
func errorLine(id []byte, e *jsonrpc2.Error) []byte {
	if id == nil {
		id = []byte("null")
	}
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(`{"code":-32603,"message":"Internal error"}`)
	}
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	out = append(out, `,"error":`...)
	out = append(out, b...)
	return append(out, '}')
}
