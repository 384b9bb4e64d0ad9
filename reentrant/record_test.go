package reentrant

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Records written by Waiter.record (and sharedRecord) read back, field by
// field, through the library's parseWaiter (and parseSharedWaiter) on a
// real server, whatever bytes the channel, the liveness key and the owner
// hold: the one format, in Go and in Lua.
func TestRecordRoundTrip(t *testing.T) {
	ctx, rdb, _ := setup(t, "records")
	type rec struct {
		w       Waiter
		owner   string
		leaseMs int64
		aliveMs int64
		given   bool
		mode    Mode
		weight  int64
	}
	long := strings.Repeat("owner with {braces} and spaces ", 4000) // ~120 KB
	recs := []rec{
		{Waiter{ID: "w1", Channel: "baton:grant:c1"}, "A", 10000, 0, false, ModeRead, 1},
		{Waiter{ID: "0123abcd", Channel: "baton:{orders}:grant:c 1", Alive: "baton:{orders}:alive:c 1"}, "job 7", 30000, 3000, true, ModeWrite, WriteWeight},
		{Waiter{ID: "w}{", Channel: "my app: grant:{x} y", Alive: ""}, "{}", 1, 0, true, ModePermits, MaxSize},
		{Waiter{ID: "ünï", Channel: "kanal:grüße", Alive: "lebt:🔒"}, "Grüße \xff\xfe 🔒", 2000, 5000, false, ModePermits, 3},
		{Waiter{ID: "w2", Channel: "c", Alive: "a"}, "w2 1 2 1 3 4 xyz", 7, 7, true, ModeRead, 1},
		{Waiter{ID: "w3", Channel: "", Alive: "a b"}, "", 9007199254740, 1, false, ModeWrite, WriteWeight},
		{Waiter{ID: "w4", Channel: "ch\n\x00", Alive: "\x00"}, "job 7 \n\n 1 0 5 %d\x00 end", 10000, 3000, true, ModePermits, 1},
		{Waiter{ID: "w5", Channel: strings.Repeat("c", 1000), Alive: strings.Repeat("k ", 500)}, long, 10000, 3000, false, ModeRead, 1},
	}
	plain, shared := []any{"plain"}, []any{"shared"}
	for _, r := range recs {
		plain = append(plain, r.w.record(r.owner, r.leaseMs, r.aliveMs, r.given))
		shared = append(shared, r.w.sharedRecord(r.mode, r.weight, r.owner, r.leaseMs, r.aliveMs, r.given))
	}
	parse := newScript(append(luaFiles(sharedLibrary...), testLua(t, "parse_record.lua"))...)
	plainReply, err := parse.Run(ctx, rdb, nil, plain...).Slice()
	require.NoError(t, err)
	sharedReply, err := parse.Run(ctx, rdb, nil, shared...).Slice()
	require.NoError(t, err)
	require.Len(t, plainReply, len(recs))
	require.Len(t, sharedReply, len(recs))
	for i, r := range recs {
		unconfirmed := r.leaseMs
		if r.w.Alive != "" && r.aliveMs > 0 {
			unconfirmed = min(r.leaseMs, r.aliveMs)
		}
		given := "0"
		if r.given {
			given = "1"
		}
		want := []any{r.w.ID, strconv.FormatInt(r.leaseMs, 10), strconv.FormatInt(unconfirmed, 10),
			given, r.w.Channel, r.w.Alive, r.owner}
		require.Equal(t, want, plainReply[i], "record %d", i)
		want = append(want, string(r.mode), strconv.FormatInt(r.weight, 10))
		require.Equal(t, want, sharedReply[i], "shared record %d", i)
	}
}

// What is not a record reads as none, so that a grant drops it as it drops
// a dead waiter's.
func TestRecordParserRefusesOtherEntries(t *testing.T) {
	ctx, rdb, _ := setup(t, "not-records")
	parse := newScript(append(luaFiles(sharedLibrary...), testLua(t, "parse_record.lua"))...)
	for kind, entries := range map[string][]any{
		"plain": {"", "0123456789abcdef", "w1 10 10 2 0 0 A", "w1 10 10 1 0 0", " 10 10 1 0 0 A", "w1 -1 10 1 0 0 A"},
		"shared": {"", "w1 10 10 1 0 0 A", "x 1 w1 10 10 1 0 0 A", "r -1 w1 10 10 1 0 0 A", "r 1 w1 10 10 2 0 0 A",
			"r1 w1 10 10 1 0 0 A", "R 1 w1 10 10 1 0 0 A"},
	} {
		reply, err := parse.Run(ctx, rdb, nil, append([]any{kind}, entries...)...).Slice()
		require.NoError(t, err)
		for i := range entries {
			require.Empty(t, reply[i], "%s %q", kind, entries[i])
		}
	}
}
