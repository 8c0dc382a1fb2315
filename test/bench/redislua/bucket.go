package redislua

import (
	"fmt"
	"strconv"
	"time"

	"github.com/trustd/trustd/test/bench/resp"
)

// Script is a token bucket in integer microseconds. KEYS[1] is the bucket;
// ARGV is capacity, refill amount, refill interval (µs), cost, and optionally
// "now" in µs (tests pin the clock with it; otherwise the server's TIME is
// used). Whole intervals are credited and the remainder kept, so refill never
// drifts; a full bucket's clock moves to now so idle time is not banked. It
// answers {allowed (0|1), remaining tokens}. Numbers are written back with
// %d because Lua 5.1's tostring keeps only 14 digits and a µs timestamp has 16.
const Script = `
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local interval = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local now
if ARGV[5] then
  now = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local state = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
if now > ts then
  local n = math.floor((now - ts) / interval)
  if n > 0 then
    tokens = tokens + n * refill
    ts = ts + n * interval
  end
end
if tokens >= capacity then
  tokens = capacity
  ts = now
end
local allowed = 0
if cost <= tokens then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 't', string.format('%d', tokens), 'ts', string.format('%d', ts))
local intervals = math.ceil((capacity - tokens) / refill)
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.floor(intervals * interval / 1000) + 1))
return {allowed, tokens}
`

// Bucket is the script's parameters.
type Bucket struct {
	Capacity       int64
	RefillAmount   int64
	RefillInterval time.Duration
	Cost           int64
}

// args renders the bucket as the script's ARGV (without "now").
func (b Bucket) args() []string {
	return []string{
		strconv.FormatInt(b.Capacity, 10),
		strconv.FormatInt(b.RefillAmount, 10),
		strconv.FormatInt(int64(b.RefillInterval/time.Microsecond), 10),
		strconv.FormatInt(b.Cost, 10),
	}
}

// Validate rejects a bucket the script cannot run.
func (b Bucket) Validate() error {
	if b.Capacity < 1 || b.RefillAmount < 1 || b.RefillInterval < time.Microsecond || b.Cost < 0 {
		return fmt.Errorf("redislua: bad bucket %+v: capacity, refill and interval must be positive", b)
	}
	return nil
}

// Load registers the script with SCRIPT LOAD and returns its SHA1.
func Load(c *resp.Conn) (string, error) {
	v, err := c.Do("SCRIPT", "LOAD", Script)
	if err != nil {
		return "", fmt.Errorf("redislua: script load: %w", err)
	}
	if v.Type != resp.BulkString || len(v.Str) != 40 {
		return "", fmt.Errorf("redislua: script load answered %+v", v)
	}
	return v.Str, nil
}

// Command encodes one EVALSHA of the script against key; nowUs, when
// positive, pins the script's clock.
func Command(dst []byte, sha, key string, b Bucket, nowUs int64) []byte {
	args := append([]string{"EVALSHA", sha, "1", key}, b.args()...)
	if nowUs > 0 {
		args = append(args, strconv.FormatInt(nowUs, 10))
	}
	return resp.AppendCommand(dst, args...)
}

// Take runs the script once on c and returns whether the request was allowed
// and the tokens left. Used by tests and set-up; the load path pre-encodes.
func Take(c *resp.Conn, sha, key string, b Bucket, nowUs int64) (allowed bool, remaining int64, err error) {
	if err := c.Send(Command(nil, sha, key, b, nowUs)); err != nil {
		return false, 0, err
	}
	var buf [2]int64
	got, err := c.Reader().ReadInts(buf[:0])
	if err != nil {
		return false, 0, err
	}
	if len(got) != 2 {
		return false, 0, fmt.Errorf("%w: script answered %d values", resp.ErrProtocol, len(got))
	}
	return got[0] == 1, got[1], nil
}
