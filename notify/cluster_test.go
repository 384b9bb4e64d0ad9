package notify

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

// TestShardedHubOnCluster runs a Sharded hub against a real three-master
// Redis Cluster. The subtests share the cluster, because creating one takes
// seconds; each looks up who serves its channels.
func TestShardedHubOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("OneConnectionPerMaster", func(t *testing.T) { testOneConnectionPerMaster(t, cl) })
	t.Run("SlotMigration", func(t *testing.T) { testSlotMigration(t, cl) })
	t.Run("MovedOnSubscribe", func(t *testing.T) { testMovedOnSubscribe(t, cl) })
	t.Run("MigrationUnderChurn", func(t *testing.T) { testMigrationUnderChurn(t, cl) })
	t.Run("SlotMatchesServer", func(t *testing.T) { testSlotMatchesServer(t, cl) })
}

// moveSettle bounds how long a test waits for a moved channel to be
// confirmed on its new master. It is generous: how soon the client sees the
// new topology depends on the load of the machine, and a test only needs to
// know that it happens, not how fast.
const moveSettle = 10 * time.Second

// clusterFixture is a Sharded hub on a cluster client of its own, whose
// connections carry name so that CLIENT LIST tells them apart.
type clusterFixture struct {
	cl    *redistest.Cluster
	admin *redis.ClusterClient
	hub   *Hub
	name  string
	ids   int // subscriptions made, for their IDs
}

func newClusterFixture(t *testing.T, cl *redistest.Cluster) *clusterFixture {
	t.Helper()
	name := strings.ReplaceAll(t.Name(), "/", "-")
	rdb := cl.ClusterClient(func(o *redis.ClusterOptions) {
		o.ClientName = name
		o.DialTimeout = 300 * time.Millisecond
		o.ReadTimeout = 300 * time.Millisecond
		o.WriteTimeout = 300 * time.Millisecond
	})
	// The default health check: these tests count wake-ups, and a PING
	// answered late on a busy machine would reconnect and add some.
	h, err := New(rdb, Options{Mode: Sharded})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return &clusterFixture{cl: cl, admin: cl.ClusterClient(), hub: h, name: name}
}

// channelOn returns a channel served by node: its name is a hash tag.
func (f *clusterFixture) channelOn(t *testing.T, node *redistest.Node, prefix string) string {
	t.Helper()
	return "{" + f.cl.TagOn(t, node, prefix) + "}"
}

func (f *clusterFixture) subscribe(t *testing.T, channel string) *Subscription {
	t.Helper()
	f.ids++
	s, err := f.hub.Subscribe(testCtx(t), channel, "s"+strconv.Itoa(f.ids))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// send SPUBLISHes a message to s on its channel's shard and returns how
// many subscribers, all on that shard, got it.
func (f *clusterFixture) send(t *testing.T, s *Subscription) int64 {
	t.Helper()
	n, err := f.admin.SPublish(testCtx(t), s.Channel(), s.ID()+" hi").Result()
	require.NoError(t, err)
	return n
}

// conns lists the IDs of this hub's pub/sub connections to node.
func (f *clusterFixture) conns(t *testing.T, node *redistest.Node) []string {
	t.Helper()
	list, err := node.Admin().Do(testCtx(t), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	require.NoError(t, err)
	var ids []string
	for _, line := range nonEmptyLines(list) {
		if strings.Contains(line, " name="+f.name+" ") {
			id, _, _ := strings.Cut(line, " ")
			ids = append(ids, id)
		}
	}
	return ids
}

func shardNumSub(t *testing.T, node *redistest.Node, channel string) int64 {
	t.Helper()
	m, err := node.Admin().PubSubShardNumSub(testCtx(t), channel).Result()
	require.NoError(t, err)
	return m[channel]
}

// movedReplies is how many MOVED errors node has replied.
func movedReplies(t *testing.T, node *redistest.Node) int {
	t.Helper()
	stats, err := node.Admin().Info(testCtx(t), "errorstats").Result()
	require.NoError(t, err)
	var n int
	for _, line := range nonEmptyLines(stats) {
		if _, err := fmt.Sscanf(line, "errorstat_MOVED:count=%d", &n); err == nil {
			return n
		}
	}
	return 0
}

// settled reports whether the hub has channel confirmed, with no move under way.
func (f *clusterFixture) settled(channel string) bool {
	f.hub.mu.Lock()
	defer f.hub.mu.Unlock()
	e := f.hub.entries[channel]
	return e != nil && e.confirmed && !e.moving
}

// requireWoken proves channel works: a new Wait gets one SPUBLISH that
// reached exactly one subscriber.
func (f *clusterFixture) requireWoken(t *testing.T, s *Subscription) {
	t.Helper()
	require.EqualValues(t, 1, f.send(t, s))
	requirePayload(t, s)
}

// requireResync waits for s's resync.
func requireResync(t *testing.T, s *Subscription, within time.Duration, msg string) {
	t.Helper()
	d, err := s.Wait(testCtx(t), within)
	require.NoError(t, err, msg)
	require.True(t, d.Resync, msg)
}

// Each master that serves a subscribed channel gets exactly one connection
// from the hub, and a master that serves none gets none; a release on any
// shard reaches the waiter there.
func testOneConnectionPerMaster(t *testing.T, cl *redistest.Cluster) {
	f := newClusterFixture(t, cl)
	var subs []*Subscription
	for _, node := range cl.Nodes[:2] {
		for _, prefix := range []string{"a-", "b-", "c-"} {
			subs = append(subs, f.subscribe(t, f.channelOn(t, node, prefix)))
		}
	}
	require.Len(t, f.conns(t, cl.Nodes[0]), 1)
	require.Len(t, f.conns(t, cl.Nodes[1]), 1)
	require.Empty(t, f.conns(t, cl.Nodes[2]), "no channel there, no connection")

	subs = append(subs, f.subscribe(t, f.channelOn(t, cl.Nodes[2], "a-")))
	for i, node := range cl.Nodes {
		require.Len(t, f.conns(t, node), 1, "node %d", i)
	}
	for _, s := range subs {
		require.EqualValues(t, 1, shardNumSub(t, cl.Owner(t, slot.Of(s.Channel())), s.Channel()))
		f.requireWoken(t, s)
	}
}

// When a channel's slot moves, the old master drops it (an unsolicited
// sunsubscribe). The hub subscribes it again on the new master, over the
// connection it already has there, and wakes its waiters, since releases
// may have been missed. Channels that did not move are not disturbed, and a
// connection left without channels is closed.
func testSlotMigration(t *testing.T, cl *redistest.Cluster) {
	f := newClusterFixture(t, cl)
	from, to := cl.Nodes[0], cl.Nodes[1]
	x, y, z := f.channelOn(t, from, "x-"), f.channelOn(t, from, "y-"), f.channelOn(t, to, "z-")
	require.NotEqual(t, slot.Of(x), slot.Of(y))
	sx, idle, sy, sz := f.subscribe(t, x), f.subscribe(t, x), f.subscribe(t, y), f.subscribe(t, z)
	waitX, waitY := asyncWait(testCtx(t), sx), asyncWait(testCtx(t), sy)
	kept, joined := f.conns(t, from), f.conns(t, to)
	require.Len(t, kept, 1)

	f.cl.MigrateSlot(t, slot.Of(x), to)
	require.Eventually(t, func() bool { return f.settled(x) }, moveSettle, 10*time.Millisecond)
	require.Equal(t, resync, await(t, waitX), "the moved channel's waiter checks again")
	requireResync(t, idle, grace, "and so does the subscription not waiting")
	require.EqualValues(t, 1, shardNumSub(t, to, x), "confirmed on the new master before the wake-up")
	requireBlocked(t, waitY)
	require.Equal(t, kept, f.conns(t, from), "the connection to the old master was kept")
	require.Equal(t, joined, f.conns(t, to), "x joined z's connection")
	f.requireWoken(t, sx)
	f.requireWoken(t, sz)
	require.EqualValues(t, 1, f.send(t, sy))
	require.NoError(t, await(t, waitY).err)

	// The old master's last channel moves away too: its connection goes.
	f.cl.MigrateSlot(t, slot.Of(y), cl.Nodes[2])
	requireResync(t, sy, moveSettle, "the resync of the move")
	require.EqualValues(t, 1, shardNumSub(t, cl.Nodes[2], y))
	f.requireWoken(t, sy)
	require.Eventually(t, func() bool { return len(f.conns(t, from)) == 0 }, settle, 10*time.Millisecond)
	f.requireWoken(t, sx)
}

// A hub whose client has not yet seen a migration routes a new channel to
// the old master, which answers MOVED. The hub waits for the client's view
// to catch up and subscribes on the new master; the channels it already had
// on the old one are not disturbed.
func testMovedOnSubscribe(t *testing.T, cl *redistest.Cluster) {
	f := newClusterFixture(t, cl)
	from, to := cl.Nodes[2], cl.Nodes[0]
	w := f.subscribe(t, f.channelOn(t, from, "w-")) // the client now knows the topology
	waitW := asyncWait(testCtx(t), w)
	m := f.channelOn(t, from, "m-")
	f.cl.MigrateSlot(t, slot.Of(m), to) // behind the client's back
	kept, redirects := f.conns(t, from), movedReplies(t, from)
	require.Len(t, kept, 1)

	start := time.Now()
	sm := f.subscribe(t, m)
	t.Logf("Subscribe after MOVED took %v", time.Since(start))
	require.Greater(t, movedReplies(t, from), redirects, "the first SSUBSCRIBE went to the old master")
	require.EqualValues(t, 1, shardNumSub(t, to, m))
	requireBlocked(t, waitW)
	require.Equal(t, kept, f.conns(t, from), "the old master's connection was kept")
	f.requireWoken(t, sm)
	require.EqualValues(t, 1, f.send(t, w))
	require.NoError(t, await(t, waitW).err)
}

// References come and go on channels of one slot while that slot moves
// back and forth, so SSUBSCRIBE and SUNSUBSCRIBE meet unsolicited
// sunsubscribes and MOVED replies. Every Subscribe must still return
// confirmed, and in the end the server holds exactly the channels still
// referenced, on the slot's final master.
func testMigrationUnderChurn(t *testing.T, cl *redistest.Cluster) {
	f := newClusterFixture(t, cl)
	home := cl.Nodes[0]
	tag := cl.TagOn(t, home, "churn-")
	slot := slot.Of(tag)
	steady := f.subscribe(t, "{"+tag+"}steady")
	ctx := testCtx(t)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			channel := "{" + tag + "}" + strconv.Itoa(g%2)
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				s, err := f.hub.Subscribe(ctx, channel, "")
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond)
				s.Close()
			}
		}()
	}
	for _, to := range []*redistest.Node{cl.Nodes[1], cl.Nodes[2], home, cl.Nodes[1]} {
		f.cl.MigrateSlot(t, slot, to)
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	for range 4 {
		require.NoError(t, <-errs)
	}
	owner := cl.Owner(t, slot)
	require.Equal(t, 1, f.hub.Channels())
	// A move still under way (the slot may have come back meanwhile) ends
	// with a resync of its own, so the mailbox is checked once it is over.
	require.Eventually(t, func() bool {
		return f.settled(steady.Channel()) && shardNumSub(t, owner, steady.Channel()) == 1 &&
			shardNumSub(t, owner, "{"+tag+"}0") == 0 && shardNumSub(t, owner, "{"+tag+"}1") == 0
	}, moveSettle, 10*time.Millisecond)
	requireResync(t, steady, grace, "the moves left the steady subscription a resync")
	f.requireWoken(t, steady)
	f.hub.mu.Lock()
	defer f.hub.mu.Unlock()
	require.Equal(t, owner.Addr, f.hub.entries[steady.Channel()].conn.key, "served by the final master's connection")
}

// The hub's own slot computation agrees with the server's.
func testSlotMatchesServer(t *testing.T, cl *redistest.Cluster) {
	ctx := testCtx(t)
	for _, ch := range []string{"baton:{orders}:released", "123456789", "{}x", "a{}b{c}", "x{", "{{a}}", ""} {
		want, err := cl.Nodes[0].Admin().ClusterKeySlot(ctx, ch).Result()
		require.NoError(t, err)
		require.EqualValues(t, want, slot.Of(ch), "%q", ch)
	}
}
