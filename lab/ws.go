package lab

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// The stream of a run, GET /api/runs/{id}/stream?from=N (WebSocket), sends
// JSON text messages, in order:
//
//	{"type":"run","run":{…}}                        the record; again whenever it changes
//	{"type":"points","from":N,"points":[{…},…]}   points N, N+1, … (at most streamBatch)
//	{"type":"end","run":{…}}                        the final record; then the server closes
//
// History first (from the notebook or memory), then live points as they
// come. The client sends nothing (pings are answered by the browser).
const (
	streamBatch = 2000
	pingEvery   = 25 * time.Second
	pongWait    = 60 * time.Second
	// metaEvery is the least interval between two "run" messages that only
	// carry progress: a run reporting progress at every step does not
	// flood its viewers.
	metaEvery = 100 * time.Millisecond
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  1024,
	WriteBufferSize: 32 << 10,
	CheckOrigin:     sameOrigin, // ServeHTTP checked it already; this keeps gorilla from using its own rule
}

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	from, err := queryInt(r, "from", 0, math.MaxInt64)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if _, err := s.getRun(id); err != nil {
		s.writeRunError(w, id, err)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		writeError(w, http.StatusBadRequest, errorf("GET /api/runs/%s/stream is a WebSocket; use GET /api/runs/%s/points for plain HTTP", id, id))
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the client
	}
	s.viewers.Add(1)
	defer s.viewers.Add(-1)
	v := &viewer{s: s, conn: conn, id: id, cursor: from, gone: make(chan struct{})}
	go v.read()
	v.serve()
	conn.Close()
}

// viewer is one WebSocket client of a run's stream: a cursor into the
// run's points and the version of the record it last sent.
type viewer struct {
	s      *Server
	conn   *websocket.Conn
	id     string
	cursor int64
	sent   uint64 // version of the record last sent (+1; 0: none)
	state  notebook.State
	metaAt time.Time // when the record was last sent
	gone   chan struct{}
	buf    []byte
}

// read consumes the client's messages (none are expected) so that control
// frames are handled, and notices when the client goes.
func (v *viewer) read() {
	defer close(v.gone)
	v.conn.SetReadLimit(4096)
	v.conn.SetReadDeadline(time.Now().Add(pongWait))
	v.conn.SetPongHandler(func(string) error { return v.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := v.conn.NextReader(); err != nil {
			return
		}
	}
}

func (v *viewer) write(b []byte) error {
	v.conn.SetWriteDeadline(time.Now().Add(v.s.opts.WriteTimeout))
	return v.conn.WriteMessage(websocket.TextMessage, b)
}

func (v *viewer) writeRun(kind string, run notebook.Run) error {
	b, err := json.Marshal(struct {
		Type string       `json:"type"`
		Run  notebook.Run `json:"run"`
	}{kind, run})
	if err != nil {
		return err
	}
	return v.write(b)
}

// writePoints sends points read from the notebook.
func (v *viewer) writePoints(pts []sim.Point) error {
	b := append(v.buf[:0], `{"type":"points","from":`...)
	b = strconv.AppendInt(b, v.cursor, 10)
	b = append(b, `,"points":`...)
	b = sim.AppendPointsJSON(b, pts)
	b = append(b, '}')
	return v.send(b, len(pts))
}

// writeEncoded sends points of the live log, encoded once for all viewers.
func (v *viewer) writeEncoded(enc [][]byte) error {
	b := append(v.buf[:0], `{"type":"points","from":`...)
	b = strconv.AppendInt(b, v.cursor, 10)
	b = append(b, `,"points":[`...)
	for i, e := range enc {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, "]}"...)
	return v.send(b, len(enc))
}

func (v *viewer) send(b []byte, n int) error {
	v.buf = b
	if err := v.write(b); err != nil {
		return err
	}
	v.cursor += int64(n)
	return nil
}

// serve sends the stream until the run has ended and every point is sent,
// or the client goes, or a write times out (a viewer too slow to take a
// message within WriteTimeout is dropped; it reconnects with ?from=N).
func (v *viewer) serve() {
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	done := v.s.done
	var metaLater <-chan time.Time // set while a progress-only record waits
	for {
		l := v.s.liveRun(v.id)
		if l == nil {
			v.finishFromNotebook()
			return
		}
		look := l.look(v.cursor, streamBatch)
		if look.behind {
			pts, err := v.s.store.Points(v.id, v.cursor, streamBatch)
			if err != nil || len(pts) == 0 || v.writePoints(pts) != nil {
				return
			}
			continue
		}
		if look.ver+1 != v.sent && metaLater == nil {
			if wait := metaEvery - time.Since(v.metaAt); wait > 0 && look.state == v.state && !look.final {
				metaLater = time.After(wait)
			} else {
				if v.writeRun("run", l.snapshot()) != nil {
					return
				}
				v.sent, v.state, v.metaAt = look.ver+1, look.state, time.Now()
			}
		}
		if len(look.encoded) > 0 {
			if v.writeEncoded(look.encoded) != nil {
				return
			}
			continue
		}
		if look.final {
			<-l.ended // the end state is in the notebook
			v.finishFromNotebook()
			return
		}
		select {
		case <-look.changed:
		case <-metaLater:
			metaLater = nil
		case <-v.gone:
			return
		case <-done:
			done = nil // the runs are ending; their end reaches us through changed
		case <-ping.C:
			v.conn.SetWriteDeadline(time.Now().Add(v.s.opts.WriteTimeout))
			if v.conn.WriteMessage(websocket.PingMessage, nil) != nil {
				return
			}
		}
	}
}

// finishFromNotebook sends the points the viewer has not had from the
// notebook, then the end, and closes.
func (v *viewer) finishFromNotebook() {
	for {
		pts, err := v.s.store.Points(v.id, v.cursor, streamBatch)
		if err != nil {
			return
		}
		if len(pts) == 0 {
			break
		}
		if v.writePoints(pts) != nil {
			return
		}
	}
	run, err := v.s.store.Get(v.id)
	if err != nil {
		return
	}
	if v.writeRun("end", run) != nil {
		return
	}
	v.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "run ended"), time.Now().Add(time.Second))
	select { // let the client close first, so that the TCP close is clean
	case <-v.gone:
	case <-time.After(time.Second):
	}
}
