//go:build linux

package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay/agent"
)

// Options configure Run.
type Options struct {
	// Agent is the agent's command line. It runs with the proxy's
	// environment and working directory (draftfs acp makes it a command
	// line that runs the agent inside the draft).
	Agent []string
	// Start, when set, starts the agent's command instead of its Start
	// (draftfs gives it back the timer slack it was started with).
	Start func(*exec.Cmd) error
	// Allow, when set, vets the directories of each session the editor
	// creates or loads (cwd, then additionalDirectories): an error
	// refuses the request (-32602, with the error's message) before the
	// agent sees it.
	Allow func(dirs []string) error
	// Stdin and Stdout connect to the editor. Run closes Stdin when it
	// is an io.Closer, to end its reader, but does not wait for a Read
	// that Close cannot interrupt (a terminal). Stderr receives the
	// agent's stderr.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Open returns the merged view of a draft of the workspace at dir.
	// It is called once per directory and draft, from several
	// goroutines; closing what it opened is the caller's, after Run.
	Open func(dir, draft string) (agent.Files, error)
	// Draft is the draft agents write to ("": the default), unless
	// DraftPerSession gives each session its own (see SessionDraft).
	Draft           string
	DraftPerSession bool
	// Terminal, when set, returns the command and leading arguments
	// that run a command in the merged view of a draft of the workspace
	// at dir (`draftfs --workspace DIR --draft NAME run --`); the
	// agent's terminal/create commands are wrapped with it when the
	// editor supports terminals.
	Terminal func(dir, draft string) (command string, args []string)
	// Step, when set, makes each prompt turn (a session/prompt request
	// to its answer) one step of the draft's timeline: it is called as
	// the request goes to the agent, with the agent's name (agentInfo of
	// its initialize answer) and the session, and what it returns as the
	// answer comes back, before the editor gets it.
	Step func(agent, session string) (end func())
	// StopTimeout is how long the agent has to exit once its input is
	// closed before it gets SIGTERM, and then before SIGKILL. Zero: 5s.
	StopTimeout time.Duration
}

// Run starts the agent and proxies between it and the editor until the
// agent is gone: it exited, or the editor hung up (the agent's input is
// then closed, and it is stopped if it does not exit) or ctx was
// cancelled (the agent is sent SIGTERM). It returns the agent's exit
// status, 128+N when signal N killed it. Editor requests the agent left
// unanswered get an error.
func Run(ctx context.Context, opts Options) (int, error) {
	if len(opts.Agent) == 0 {
		return 0, errors.New("acp: no agent command")
	}
	if opts.Open == nil {
		return 0, errors.New("acp: no Open function")
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 5 * time.Second
	}
	// The agent's stdio are pipes of our own: exec's StdoutPipe would be
	// closed by Wait, possibly before the agent's last messages are read.
	agentIn, toAgent, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("acp: %w", err)
	}
	fromAgent, agentOut, err := os.Pipe()
	if err != nil {
		agentIn.Close()
		toAgent.Close()
		return 0, fmt.Errorf("acp: %w", err)
	}
	for _, f := range []any{toAgent, fromAgent, opts.Stdin, opts.Stdout} {
		growPipe(f)
	}
	cmd := exec.Command(opts.Agent[0], opts.Agent[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = agentIn, agentOut, opts.Stderr
	if opts.Start != nil {
		err = opts.Start(cmd)
	} else {
		err = cmd.Start()
	}
	agentIn.Close()
	agentOut.Close()
	if err != nil {
		toAgent.Close()
		fromAgent.Close()
		return 0, fmt.Errorf("acp: start the agent %q: %w", opts.Agent[0], err)
	}

	p := newProxy(&opts, opts.Stdout, toAgent)
	editorDone := make(chan struct{})
	go func() {
		p.readEditor(opts.Stdin)
		close(editorDone)
	}()
	agentDone := make(chan struct{})
	go func() {
		p.readAgent(fromAgent)
		close(agentDone)
	}()
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()

	s := stopper{cmd: cmd, in: toAgent, grace: opts.StopTimeout}
	editorGone, ctxDone, agentEOF, agentExited := editorDone, ctx.Done(), agentDone, exited
	var drain <-chan time.Time // after exit: how long output may still come
	for agentEOF != nil || agentExited != nil {
		select {
		case <-editorGone:
			editorGone = nil
			s.start(false)
		case <-ctxDone:
			ctxDone = nil
			s.start(true)
		case <-agentEOF:
			agentEOF = nil
			s.start(false)
		case <-agentExited:
			agentExited = nil
			drain = time.After(opts.StopTimeout)
		case <-drain:
			// The agent exited but something it started holds its output
			// open: stop reading.
			fromAgent.Close()
		case <-s.timer:
			s.escalate()
		}
	}
	s.stopTimer()
	fromAgent.Close()
	status := exitStatus(cmd.ProcessState)
	p.stopServing()
	p.failPending(fmt.Sprintf("the agent exited (%s) before answering", describeExit(cmd.ProcessState)))
	if c, ok := opts.Stdin.(io.Closer); ok {
		c.Close()
	}
	return status, nil
}

// growPipe lets a pipe hold a large message whole (1 MiB instead of 64
// KiB), so that passing one does not cost a pair of context switches per
// 64 KiB. Best effort: f may not be a pipe, or the system may refuse.
func growPipe(f any) {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
}

// stopper ends the agent step by step: input closed, SIGTERM, SIGKILL,
// each after grace.
type stopper struct {
	cmd   *exec.Cmd
	in    io.Closer
	grace time.Duration
	step  int // 0 running, 1 input closed, 2 SIGTERM sent, 3 SIGKILL sent
	t     *time.Timer
	timer <-chan time.Time
}

func (s *stopper) start(term bool) {
	if s.step == 0 {
		s.in.Close()
		s.step = 1
		s.arm()
	}
	if term && s.step == 1 {
		s.escalate()
	}
}

func (s *stopper) escalate() {
	switch s.step {
	case 1:
		s.cmd.Process.Signal(syscall.SIGTERM)
	case 2:
		s.cmd.Process.Kill()
	default:
		return
	}
	s.step++
	s.arm()
}

func (s *stopper) arm() {
	s.stopTimer()
	s.t = time.NewTimer(s.grace)
	s.timer = s.t.C
}

func (s *stopper) stopTimer() {
	if s.t != nil {
		s.t.Stop()
	}
}

func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func describeExit(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("status %d", ps.ExitCode())
}
