package blockbook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsPair is a websocket's two ends: the daemon's, as a wsConn with a queue
// of one and no writer running yet, and the client's.
func wsPair(t *testing.T) (*wsConn, *websocket.Conn) {
	t.Helper()
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		conns <- conn
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c := &wsConn{conn: <-conns, out: make(chan wsMessage, 1), overflowed: make(chan struct{}, 1)}
	t.Cleanup(func() { c.conn.Close() })
	return c, client
}

// TestPushToAFullQueueDoesNotWaitForTheWriter: a client that reads
// nothing fills its socket, the writer waits in a write (up to its 10 s
// deadline) and the client's queue fills; a push to it then has the
// writer close the connection, and returns at once: every other
// subscriber's pushes wait behind it. push used to write the close frame
// itself, waiting a second for the full socket (or the writer's write
// lock), for each such client and block.
func TestPushToAFullQueueDoesNotWaitForTheWriter(t *testing.T) {
	c, client := wsPair(t)
	// Fill the socket: a write that cannot finish says it is full.
	raw := c.conn.UnderlyingConn()
	chunk := make([]byte, 64<<10)
	for {
		_ = raw.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := raw.Write(chunk); err != nil {
			if !isTimeout(err) {
				t.Fatal(err)
			}
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	written := make(chan struct{})
	go func() { defer close(written); c.write(ctx) }()
	// The writer takes the first message and waits in its write; the
	// second waits in the queue, which is then full.
	for _, id := range []string{"written", "queued"} {
		if !c.send(ctx, wsMessage{ID: id}) {
			t.Fatal("the writer ended")
		}
	}
	start := time.Now()
	c.push(wsMessage{ID: "pushed"})
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("push waited %v for the writer", took)
	}
	if len(c.overflowed) != 1 {
		t.Error("the writer was not told to close the connection")
	}
	client.Close() // the writer's write fails, and it ends
	<-written
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestAClientWhoseQueueOverflowedIsToldWhy: a push to a full queue
// closes the connection with a close frame that says why, which the
// writer sends before the messages that wait.
func TestAClientWhoseQueueOverflowedIsToldWhy(t *testing.T) {
	c, client := wsPair(t)
	c.out <- wsMessage{ID: "queued"}
	c.push(wsMessage{ID: "pushed"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	written := make(chan struct{})
	go func() { defer close(written); c.write(ctx) }()
	_, msg, err := client.ReadMessage()
	var closed *websocket.CloseError
	if !errors.As(err, &closed) || closed.Code != websocket.ClosePolicyViolation || !strings.Contains(closed.Text, "reads too slowly") {
		t.Errorf("read %s (%v); want the close frame %d, the client reads too slowly", msg, err, websocket.ClosePolicyViolation)
	}
	<-written
}
