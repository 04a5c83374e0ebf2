package server

import (
	"crypto/tls"
	"net"
	"sync"
)

// limitListener holds at most max connections open: the next waits in the
// kernel's backlog, costing the process no file descriptor, until one
// closes (as golang.org/x/net/netutil's LimitListener). Beyond that it
// knows its open connections by their remote address, so the daemon can
// close the one a gRPC call came on (grpc_inflight.go), and a connection
// can give its slot back before it closes: a websocket is counted against
// a limit of its own (websocketSlots in http.go).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu   sync.Mutex
	open map[string]*limitedConn // by remote address
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{}), open: map[string]*limitedConn{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.open[c.RemoteAddr().String()] = lc
	l.mu.Unlock()
	return lc, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// conn returns the open connection from remote, nil when there is none.
func (l *limitListener) conn(remote net.Addr) *limitedConn {
	if remote == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[remote.String()]
}

// limitedConn is a connection of a limitListener.
type limitedConn struct {
	net.Conn
	l           *limitListener
	releaseOnce sync.Once
	closeOnce   sync.Once
}

// releaseSlot gives the connection's slot back while it stays open.
func (c *limitedConn) releaseSlot() {
	c.releaseOnce.Do(func() { <-c.l.slots })
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.RemoteAddr().String()] == c {
			delete(c.l.open, c.RemoteAddr().String())
		}
		c.l.mu.Unlock()
		c.releaseSlot()
	})
	return err
}

// limitedConnOf finds the limitedConn under a connection the HTTP server
// hands out (a *tls.Conn over it with TLS).
func limitedConnOf(c net.Conn) *limitedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}
