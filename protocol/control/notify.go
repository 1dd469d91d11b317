package control

import (
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// Notifications: the engine's changes fanned out to every connection
// as draft/didChange, each connection sending its own queue.

// sendNotices sends queued notifications until the connection ends.
func (cn *conn) sendNotices() {
	defer cn.s.wg.Done()
	for {
		select {
		case n := <-cn.queue:
			if err := cn.rpc.Notify(cn.s.ctx, n.method, n.params); err != nil {
				cn.rpc.Close()
				return
			}
		case <-cn.done:
			return
		}
	}
}

// burstQuiet is how long the change feed stays quiet before a burst of
// changes is over (see ServerOptions.Heavy).
const burstQuiet = time.Second

// fanOut turns the change feed into notifications for every subscribed
// connection. It never blocks on a client: a full queue is emptied and
// replaced by one notification that says changes were lost. A burst of
// changes runs under ServerOptions.Heavy until the feed is quiet for
// burstQuiet.
func (s *Server) fanOut() {
	defer s.wg.Done()
	var end func()             // the burst's, while changes come
	var batch []overlay.Change // reused: a burst's batches are large
	quiet := time.NewTimer(burstQuiet)
	defer func() {
		quiet.Stop()
		if end != nil {
			end()
		}
	}()
	for {
		var c overlay.Change
		select {
		case ch, ok := <-s.sub.C:
			if !ok {
				return
			}
			c = ch
		case <-quiet.C:
			if end != nil {
				end()
				end = nil
			}
			continue
		}
		if end == nil && s.opts.Heavy != nil {
			end = s.opts.Heavy(BurstOfChanges)
		}
		quiet.Reset(burstQuiet)
		batch = append(batch[:0], c)
	more:
		for len(batch) < 4096 {
			select {
			case c, ok := <-s.sub.C:
				if !ok {
					break more
				}
				batch = append(batch, c)
			default:
				break more
			}
		}
		s.broadcast(batch)
	}
}

// notices turns changes into notifications: runs of commits or
// discards of one draft become one didCommit or didDiscard.
func (s *Server) notices(batch []overlay.Change) []notice {
	var out []notice
	for i := 0; i < len(batch); {
		c := batch[i]
		if (c.Kind == overlay.ChangeCommit || c.Kind == overlay.ChangeDiscard) && !c.Overflow {
			j := i
			var paths []string
			for ; j < len(batch) && batch[j].Kind == c.Kind && batch[j].Draft == c.Draft && !batch[j].Overflow; j++ {
				paths = append(paths, s.ws.Abs(batch[j].Path))
			}
			method := "draft/didCommit"
			if c.Kind == overlay.ChangeDiscard {
				method = "draft/didDiscard"
			}
			out = append(out, notice{method, pathsNotice{Draft: c.Draft, Paths: paths}})
			i = j
			continue
		}
		if c.Overflow {
			out = append(out, overflowNotice(s.ws.Root()))
		}
		n := ChangeNotice{Draft: c.Draft, Path: s.ws.Abs(c.Path), Change: string(c.Kind), Source: string(c.Source)}
		if c.From != "" {
			n.From = s.ws.Abs(c.From)
		}
		out = append(out, notice{"draft/didChange", n})
		i++
	}
	return out
}

func overflowNotice(root string) notice {
	return notice{"draft/didChange", ChangeNotice{Path: root, Change: "overflow", Overflow: true}}
}

// broadcast queues the notifications of batch to every subscribed
// client; with none (no editor connected), it makes none.
func (s *Server) broadcast(batch []overlay.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ns []notice
	for cn := range s.conns {
		if !cn.subscribed.Load() {
			continue
		}
		if ns == nil {
			ns = s.notices(batch)
		}
		for _, n := range ns {
			select {
			case cn.queue <- n:
				continue
			default:
			}
			// Full: the client is slow. Drop what waits, say so, go on.
		drain:
			for {
				select {
				case <-cn.queue:
				default:
					break drain
				}
			}
			cn.queue <- overflowNotice(s.ws.Root())
			break
		}
	}
}
