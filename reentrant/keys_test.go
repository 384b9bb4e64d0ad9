package reentrant

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/notify/slot"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a:b/c d", true},
		{strings.Repeat("x", MaxNameLen), true},
		{"", false},
		{"{x}", false},
		{"a}", false},
		{"b{", false},
		{strings.Repeat("x", MaxNameLen+1), false},
	} {
		err := ValidateName(tc.name)
		if tc.ok {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidName, "name %.20q", tc.name)
		_, err = Namespace{}.Keys(tc.name)
		require.ErrorIs(t, err, ErrInvalidName)
	}
}

func TestInvalidPrefix(t *testing.T) {
	_, err := Namespace{Prefix: "app{1}:"}.Keys("x")
	require.ErrorIs(t, err, ErrInvalidPrefix)
}

func TestKeyLayout(t *testing.T) {
	l, err := Namespace{}.Keys("orders")
	require.NoError(t, err)
	require.Equal(t, "baton:{orders}", l.Hash)
	require.Equal(t, "baton:{orders}:fence", l.Fence)
	require.Equal(t, "baton:{orders}:queue", l.Queue)
	require.Equal(t, "baton:{orders}:granted", l.Granted)
	require.Equal(t, "baton:{orders}:req:abc", l.RequestKey("abc"))
	require.Equal(t, "baton:grant:c1", l.GrantChannel("c1"), "one channel per client, whatever the lock")
	require.Equal(t, "publish", l.publish)

	l, err = Namespace{Prefix: "app:", Sharded: true}.Keys("orders")
	require.NoError(t, err)
	require.Equal(t, "app:{orders}", l.Hash)
	require.Equal(t, "app:{orders}:grant:c1", l.GrantChannel("c1"), "in the lock's slot")
	require.Equal(t, "spublish", l.publish)
}

// Every key and the channel of one lock must hash to one cluster slot, or
// the scripts fail with CROSSSLOT on a cluster.
func TestDerivedKeysShareOneSlot(t *testing.T) {
	slots := map[int]bool{}
	for i := 0; i < 5000; i++ {
		name := fmt.Sprintf("lock-%d:%x", i, i*7919)
		l, err := Namespace{}.Keys(name)
		require.NoError(t, err)
		want := slot.Of(l.Hash)
		sharded, err := Namespace{Sharded: true}.Keys(name)
		require.NoError(t, err)
		for _, k := range []string{l.Fence, l.Queue, l.Granted, l.RequestKey("r1"), l.RequestKey(name), sharded.GrantChannel("c")} {
			require.Equal(t, want, slot.Of(k), "%s vs %s", l.Hash, k)
		}
		require.Equal(t, slot.Of(name), want, "the tag is the lock name")
		slots[want] = true
	}
	require.Greater(t, len(slots), 4000, "names spread over the slot space")
}

func TestReleaseStatusString(t *testing.T) {
	require.Equal(t, "released", Released.String())
	require.Equal(t, "ReleaseStatus(9)", ReleaseStatus(9).String())
}

// BenchmarkKeys derives a lock's keys, as every Lock does: one allocation
// for all of them.
func BenchmarkKeys(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Namespace{}).Keys("orders/42"); err != nil {
			b.Fatal(err)
		}
	}
}

// The keys of a shared resource: distinct from the plain lock's and
// the other kind's of the same name, all in the name's slot, and the grant
// channel the plain lock's.
func TestSharedKeyLayout(t *testing.T) {
	k, err := Namespace{}.SharedKeys(KindRW, "orders")
	require.NoError(t, err)
	require.Equal(t, SharedKeys{Name: "orders", Kind: KindRW, Hash: "baton:{orders}:rw", Leases: "baton:{orders}:rw:leases",
		Queue: "baton:{orders}:rw:queue", Fence: "baton:{orders}:rw:fence"}, exported(k))
	require.Equal(t, "baton:{orders}:rw:req:x", k.RequestKey("x"))
	require.Equal(t, "baton:grant:c1", k.GrantChannel("c1"))
	s, err := Namespace{Prefix: "app:", Sharded: true}.SharedKeys(KindSemaphore, "orders")
	require.NoError(t, err)
	require.Equal(t, "app:{orders}:sem:size", s.Size)
	require.Equal(t, "app:{orders}:grant:c1", s.GrantChannel("c1"), "the lock's channel, in its slot")
	_, err = Namespace{}.SharedKeys("mutex", "orders")
	require.ErrorIs(t, err, ErrInvalidKind)
	_, err = Namespace{}.SharedKeys(KindRW, "a{b")
	require.ErrorIs(t, err, ErrInvalidName)

	for i := range 500 {
		name := fmt.Sprintf("res-%d:%x", i, i*7919)
		want := slot.Of(name)
		for _, kind := range []Kind{KindRW, KindSemaphore} {
			k, err := Namespace{Sharded: true, ReceiversElsewhere: true}.SharedKeys(kind, name)
			require.NoError(t, err)
			for _, key := range append(k.keys(k.RequestKey("r")), k.AliveKey("c"), k.GrantChannel("c")) {
				require.Equal(t, want, slot.Of(key), key)
			}
		}
	}
}

// exported is k with its unexported fields zeroed, for comparison.
func exported(k SharedKeys) SharedKeys {
	return SharedKeys{Name: k.Name, Kind: k.Kind, Hash: k.Hash, Leases: k.Leases, Queue: k.Queue, Fence: k.Fence, Size: k.Size}
}
