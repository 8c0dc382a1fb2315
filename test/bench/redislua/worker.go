package redislua

import (
	"errors"
	"strconv"
	"time"

	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/test/bench/resp"
)

// Commands pre-encodes the EVALSHA of every key ("bench:<k>") for b.
func Commands(n int, sha string, b Bucket) *keys.Payloads {
	head := resp.AppendCommand(nil, "EVALSHA", sha, "1")
	head[1] = '8' // the array has 4 + 4 elements: patch the count written for 3
	tail := resp.AppendCommand(nil, b.args()...)
	tail = tail[len("*4\r\n"):]
	return keys.NewPayloads(n, func(dst []byte, k int) []byte {
		var num [20]byte
		digits := strconv.AppendInt(num[:0], int64(k), 10)
		dst = append(dst, head...)
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len("bench:")+len(digits)), 10)
		dst = append(dst, "\r\nbench:"...)
		dst = append(dst, digits...)
		dst = append(dst, '\r', '\n')
		return append(dst, tail...)
	})
}

// Worker runs the bucket script on its own connection for one load
// goroutine.
type Worker struct {
	conn    *resp.Conn
	cmds    *keys.Payloads
	chooser *keys.Chooser
	buf     []byte
	ints    []int64
}

// NewWorker dials addr and prepares to call the script over cmds' keys.
func NewWorker(addr string, cmds *keys.Payloads, chooser *keys.Chooser, timeout time.Duration) (*Worker, error) {
	c, err := resp.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &Worker{conn: c, cmds: cmds, chooser: chooser, ints: make([]int64, 0, 2)}, nil
}

// Do calls the script for the next key.
func (w *Worker) Do() load.Outcome {
	cmd := w.cmds.Get(&w.buf, w.chooser.Next())
	if err := w.conn.Send(cmd); err != nil {
		return load.Outcome{Kind: load.Transport}
	}
	var err error
	w.ints, err = w.conn.Reader().ReadInts(w.ints)
	var re resp.ReplyError
	switch {
	case err == nil && len(w.ints) == 2:
		if w.ints[0] == 1 {
			return load.Outcome{Decision: load.Allow}
		}
		return load.Outcome{Decision: load.Throttle}
	case err == nil, errors.Is(err, resp.ErrProtocol):
		return load.Outcome{Kind: load.Decode}
	case errors.As(err, &re):
		// A Redis error reply: counted as a status error with no HTTP code.
		return load.Outcome{Kind: load.Status}
	default:
		return load.Outcome{Kind: load.Transport}
	}
}

// Close closes the worker's connection.
func (w *Worker) Close() error { return w.conn.Close() }
