package redis

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// casScript is the one piece of Lua: a generic compare-and-set of one stored
// string that keeps the string's index entries with it. It knows nothing of
// records; the record layer's rules ran in Go before it was sent.
//
//	KEYS[1]      the stored string: 8-byte stamp ‖ value
//	KEYS[2..]    the sorted sets indexing it, one per index
//	ARGV[1]      the stamp expected now: "" for absent, "*" for anything
//	ARGV[2]      "p" to put ARGV[4], "d" to delete
//	ARGV[3]      the member naming the string in the sorted sets
//	ARGV[4]      the new stored string (put)
//	ARGV[5..]    the new score per sorted set, "0" for none (put)
//
// It returns 1 when it wrote. When the stamp differed (a conflict, or an
// assumption of Update's that was stale) it returns the stored string as
// it is, nil for none, so that the caller need not read it again. The
// stamp is random per write, so a changed record never compares equal to
// an old read, whatever its value.
const casScript = `
if ARGV[1] ~= '*' and redis.call('GETRANGE', KEYS[1], 0, 7) ~= ARGV[1] then
  return redis.call('GET', KEYS[1])
end
if ARGV[2] == 'd' then
  redis.call('DEL', KEYS[1])
  for i = 2, #KEYS do redis.call('ZREM', KEYS[i], ARGV[3]) end
  return 1
end
redis.call('SET', KEYS[1], ARGV[4])
for i = 2, #KEYS do
  local score = ARGV[3 + i]
  if score == '0' then
    redis.call('ZREM', KEYS[i], ARGV[3])
  else
    redis.call('ZADD', KEYS[i], score, ARGV[3])
  end
end
return 1
`

var cas = redis.NewScript(casScript)

const anyStamp = "*"

// casWrite is one compare-and-set to send.
type casWrite struct {
	key     engine.Key
	expect  string // stamp seen, "" for absent, anyStamp for unconditional
	remove  bool
	stamp   string // the new stamp (put)
	encoded []byte // the new stored string: stamp ‖ value (put)
	terms   engine.Terms
}

func (e *Engine) addCAS(ctx context.Context, p redis.Pipeliner, w *casWrite) redis.Cmder {
	args := make([]any, 0, 4+len(engine.Indexes))
	if w.remove {
		args = append(args, w.expect, "d", w.key[:])
	} else {
		args = append(args, w.expect, "p", w.key[:], w.encoded)
		for _, idx := range engine.Indexes {
			args = append(args, strconv.FormatUint(uint64(idx.Term(w.terms)), 10))
		}
	}
	keys := append([]string{e.lay.record(w.key)}, e.lay.indexesOf(w.key)...)
	return p.EvalSha(ctx, cas.Hash(), keys, args...)
}

// loadScript loads the CAS script on every master, and on every node an ASK
// reply named: a new master importing its first slot is not among the
// masters yet. Masters promoted after a failover may not have it; a
// NOSCRIPT reply brings us here again.
func (e *Engine) loadScript(ctx context.Context) error {
	load := func(ctx context.Context, c *redis.Client) error {
		return nodeError(c.Options().Addr, cas.Load(ctx, c).Err())
	}
	if e.cluster == nil {
		return load(ctx, e.single)
	}
	err := e.cluster.ForEachMaster(ctx, load)
	e.askMu.Lock()
	targets := slices.Collect(maps.Values(e.askClients))
	e.askMu.Unlock()
	for _, c := range targets {
		err = errors.Join(err, load(ctx, c))
	}
	return err
}

func isNoScript(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOSCRIPT")
}
