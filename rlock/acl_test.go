package rlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/notify/slot"
)

const aclPassword = "acl-test-password"

// The documented rules are exactly enough: a user with them runs every kind
// of call without one denial in ACL LOG, and a user missing any single rule
// is denied something (or fails). Both topologies, each with its own rules.
func TestACLRulesAreSufficientAndMinimal(t *testing.T) {
	clusterSrv, clusterReady := oneNodeCluster(t, "--acllog-max-len", "1024")
	t.Run("single", func(t *testing.T) {
		srv := redistest.Start(t, "--acllog-max-len", "1024")
		checkACLRules(t, srv.Admin(), ACLRules, func(user string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: aclPassword})
		})
	})
	t.Run("cluster", func(t *testing.T) {
		clusterReady()
		checkACLRules(t, clusterSrv.Admin(), ACLClusterRules, func(user string) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{clusterSrv.Addr}, Username: user, Password: aclPassword})
		})
	})
}

// The README shows the single-node rules as they are.
func TestREADMEShowsTheACLRules(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "ACL SETUSER app on >secret resetkeys resetchannels -@all "+ACLRules+"\n")
}

// oneNodeCluster starts a cluster-enabled server and gives it every slot.
// Redis reports a fresh cluster ok only about 2s after start-up, so the
// caller calls ready just before it needs the cluster, and can do other
// work meanwhile.
func oneNodeCluster(t *testing.T, args ...string) (srv *redistest.Server, ready func()) {
	t.Helper()
	srv = redistest.Start(t, append([]string{"--cluster-enabled", "yes"}, args...)...)
	admin := srv.Admin()
	ctx := testCtx(t)
	require.NoError(t, admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	return srv, func() {
		t.Helper()
		require.Eventually(t, func() bool {
			info, err := admin.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		}, 10*time.Second, 20*time.Millisecond)
	}
}

// checkACLRules runs aclWorkload with clients made with opts, as a user
// with rules and as one without each of them.
func checkACLRules(t *testing.T, admin *redis.Client, rules string, dial func(user string) redis.UniversalClient, opts ...Option) {
	ctx := testCtx(t)
	setUser := func(user string, rules []string) {
		args := append([]string{"reset", "on", ">" + aclPassword}, rules...)
		require.NoError(t, admin.ACLSetUser(ctx, user, args...).Err())
	}
	denials := func(user string) []string {
		entries, err := admin.ACLLog(ctx, 1024).Result()
		require.NoError(t, err)
		var got []string
		for _, e := range entries {
			if e.Username == user {
				got = append(got, e.Reason+":"+e.Object)
			}
		}
		return got
	}
	all := strings.Fields(rules)
	setUser("full", all)
	// EVAL runs only when the script cache is empty, which concurrent
	// users would refill for each other: it gets a phase of its own below.
	// ASKING needs a slot migration between two nodes, and has its own test.
	// WAIT is sent only where the master has replicas, which these nodes
	// lack: the acknowledgement tests need it under BATON_REDIS_ACL=1.
	var without []string
	for _, r := range all {
		if r != "+eval" && r != "+asking" && r != "+wait" {
			without = append(without, r)
			setUser("without"+r, slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == r }))
		}
	}
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, user := range append([]string{"full"}, prefixed("without", without)...) {
		wg.Go(func() {
			err := aclWorkload(ctx, func() redis.UniversalClient { return dial(user) }, "acl/"+user, opts...)
			mu.Lock()
			errs[user] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	require.NoError(t, errs["full"])
	require.Empty(t, denials("full"), "the documented rules are not enough")
	for _, r := range without {
		user := "without" + r
		d := denials(user)
		want := deniedObject(r)
		require.True(t, slices.ContainsFunc(d, func(s string) bool { return strings.HasPrefix(s, want) }),
			"without %s: denied %v (want %s...), error %v", r, d, want, errs[user])
	}

	require.NoError(t, admin.ScriptFlush(ctx).Err())
	require.NoError(t, lockUnlock(ctx, dial("full"), "acl/eval", opts...))
	require.Empty(t, denials("full"), "reloading the scripts")
	setUser("without+eval", slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == "+eval" }))
	require.NoError(t, admin.ScriptFlush(ctx).Err())
	require.Error(t, lockUnlock(ctx, dial("without+eval"), "acl/noeval", opts...), "+eval is needed after SCRIPT FLUSH")
}

// deniedObject is how ACL LOG names what rule r grants: "command:ping" for
// "+ping", "key:" for a key pattern, "channel:" for a channel pattern. A
// rule on a command's first argument is named by its command: the log
// says "cluster|slots" for a subcommand, but "info" for +info|replication.
func deniedObject(r string) string {
	switch r[0] {
	case '~':
		return "key:"
	case '&':
		return "channel:"
	}
	command, _, _ := strings.Cut(r[1:], "|")
	return "command:" + command
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

func lockUnlock(ctx context.Context, rdb redis.UniversalClient, name string, opts ...Option) error {
	defer rdb.Close()
	c, err := New(rdb, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := c.Lock(ctx, name)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// aclWorkload makes every kind of call a baton client makes: acquire (EVALSHA),
// re-entry, a contended wait over pub/sub idle long enough for the hub's
// health-check PING, watchdog renewals, Inspect, a partial and a full
// release, the waiter's unsubscribe, and ForceUnlock; on an RW lock a
// renewed read, a write granted by its release, Inspect and ForceUnlock;
// and on a semaphore (semWorkload) renewed permits, a waiter granted by
// SetSize, Release, Inspect and ForceRelease. It returns the first
// error; denied calls that only show in ACL LOG are the caller's to check.
// Both clients are made with opts.
func aclWorkload(ctx context.Context, dial func() redis.UniversalClient, name string, opts ...Option) (err error) {
	// The full workload takes about 2s alone; a denied subscribe waits this
	// out. Forty of them run at once, under the race detector on two
	// cores: at 2.5s most ran out before their Inspect.
	ctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	ra, rb := dial(), dial()
	defer ra.Close()
	defer rb.Close()
	// Renewals every 800ms: one falls in the sleep below, while a loaded
	// machine (forty of these run at once, under -race on two cores) has
	// most of the lease as slack before a late renewal would lose the lock
	// (at 1.5s, one in five full runs lost one).
	a, err := New(ra, append(opts, WithWatchdogLease(2400*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := New(rb, opts...)
	if err != nil {
		return err
	}
	defer b.Close()

	outer, err := a.Lock(ctx, name)
	if err != nil {
		return err
	}
	inner, err := a.Lock(outer.Context(), name)
	if err != nil {
		return err
	}
	var waitErr [3]error
	var wg sync.WaitGroup
	wg.Go(func() {
		l, err := b.Lock(ctx, name)
		if err == nil {
			err = l.Unlock(ctx)
		}
		waitErr[0] = err
	})
	defer func() { wg.Wait(); err = errors.Join(err, waitErr[0], waitErr[1], waitErr[2]) }()
	// A waiter that gives up leaves the queue (LREM). It waits long enough
	// to have queued first, even where subscribing is slow under load.
	if _, err := b.Lock(ctx, name, WaitAtMost(400*time.Millisecond)); !errors.Is(err, ErrNotObtained) {
		return errors.Join(err, errors.New("a waiter did not give up"))
	}
	if a.wire != nil {
		if err := wireUnsubscribe(ctx, a, b, name+"/alone"); err != nil {
			return err
		}
	}
	// Wire mode has no RW lock and no semaphore (ErrWireUnsupported): its
	// rules need none.
	var read *Lock
	var permits *Permit
	if a.wire == nil {
		if read, err = rwWorkload(ctx, a, b, name+"/rw", &wg, &waitErr[1]); err != nil {
			return err
		}
		if permits, err = semWorkload(ctx, a, b, name+"/sem", &wg, &waitErr[2]); err != nil {
			return err
		}
	}
	// Past the hub's 1s health-check interval, and a renewal (of the read
	// and the permits too).
	time.Sleep(1300 * time.Millisecond)
	if _, err := a.Inspect(ctx, name); err != nil {
		return err
	}
	if read != nil {
		if err := rwRelease(ctx, a, b, name+"/rw", read); err != nil {
			return err
		}
		if err := semRelease(ctx, a, b, name+"/sem", permits); err != nil {
			return err
		}
	}
	if err := inner.Unlock(ctx); err != nil {
		return err
	}
	if err := outer.Unlock(ctx); err != nil {
		return err
	}
	held, err := a.Lock(ctx, name+"/forced")
	if err != nil {
		return err
	}
	if n, err := b.ForceUnlock(ctx, held.Name()); err != nil || n != 1 {
		return errors.Join(err, errors.New("ForceUnlock found nothing"))
	}
	return nil
}

// wireUnsubscribe has b wait for name, held by a, alone in its line, and
// give up: the line's last waiter unsubscribes, in the background. The
// waiters on aclWorkload's own lock leave their line only just before the
// clients close, which would cut that UNSUBSCRIBE short.
func wireUnsubscribe(ctx context.Context, a, b *Client, name string) error {
	held, err := a.Lock(ctx, name)
	if err != nil {
		return err
	}
	if _, err := b.Lock(ctx, name, WaitAtMost(400*time.Millisecond)); !errors.Is(err, ErrNotObtained) {
		return errors.Join(err, errors.New("a waiter alone in its line did not give up"))
	}
	return held.Unlock(ctx)
}

// rwWorkload starts the RW lock's part of aclWorkload: a's read, which
// a's watchdog renews while it is held; b's write, which waits for it on
// wg (its error in waitErr) and is granted by the read's release; and a
// read of b's queued behind the write, which gives up and leaves the
// queue. The queue is watched with Inspect, so the leave runs for sure.
func rwWorkload(ctx context.Context, a, b *Client, name string, wg *sync.WaitGroup, waitErr *error) (*Lock, error) {
	rw := a.RWLock(name)
	read, err := rw.RLock(ctx)
	if err != nil {
		return nil, err
	}
	wg.Go(func() {
		w, err := b.RWLock(name).Lock(ctx)
		if err == nil {
			err = w.Unlock(ctx)
		}
		*waitErr = err
	})
	if err := awaitRWQueued(ctx, rw, 1); err != nil {
		return read, err
	}
	rctx, giveUp := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.RWLock(name).RLock(rctx)
		gaveUp <- err
	}()
	err = awaitRWQueued(ctx, rw, 2)
	giveUp()
	if rerr := <-gaveUp; !errors.Is(rerr, ErrNotObtained) {
		err = errors.Join(err, rerr, errors.New("a read behind a queued write did not wait"))
	}
	return read, err
}

// awaitRWQueued waits until rw's queue holds n waiters, or ctx ends.
func awaitRWQueued(ctx context.Context, rw *RWLock, n int64) error {
	for {
		st, err := rw.Inspect(ctx)
		if err != nil || st.Queued >= n {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// rwRelease ends rwWorkload's part: Inspect, the read's Unlock (which
// grants the queued write), and a ForceUnlock of a read held again.
func rwRelease(ctx context.Context, a, b *Client, name string, read *Lock) error {
	rw := a.RWLock(name)
	if _, err := rw.Inspect(ctx); err != nil {
		return err
	}
	if err := read.Unlock(ctx); err != nil {
		return err
	}
	if _, err := rw.RLock(ctx); err != nil {
		return err
	}
	if n, err := b.RWLock(name).ForceUnlock(ctx); err != nil || n == 0 {
		return errors.Join(err, errors.New("RW ForceUnlock found nothing"))
	}
	return nil
}

// A release that hands the lock to a waiter publishes the grant before it
// writes: a user that may not publish on the grant channel gets an error
// from Unlock, and the lock is still held with its hold count unchanged,
// not handed to a waiter that is never told.
func TestACLMissingChannelFailsBeforeWrite(t *testing.T) {
	ctx, srv := serve(t)
	rdb := srv.Admin()
	rules := strings.ReplaceAll(ACLRules, "&baton:*", "")
	require.NoError(t, rdb.ACLSetUser(ctx, "nochannel", append([]string{"reset", "on", ">" + aclPassword}, strings.Fields(rules)...)...).Err())
	user := srv.Client(func(o *redis.Options) { o.Username, o.Password = "nochannel", aclPassword })
	lc, err := New(user)
	require.NoError(t, err)
	defer lc.Close()

	outer, err := lc.Lock(ctx, "nochan")
	require.NoError(t, err, "acquiring publishes nothing")
	inner, err := lc.Lock(outer.Context(), "nochan")
	require.NoError(t, err)
	require.NoError(t, inner.Unlock(ctx), "a partial release publishes nothing")
	waiter := newClient(t, srv) // a user that may subscribe
	waited := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_, err := waiter.Lock(wctx, "nochan")
		waited <- err
	}()
	waitForQueued(t, srv, "nochan", 1)

	for attempt := 0; attempt < 2; attempt++ {
		err = outer.Unlock(ctx)
		require.Error(t, err)
		require.ErrorContains(t, err, "channel", "Redis refused the PUBLISH (7.0 says ERR, 7.2+ NOPERM)")
		require.NotErrorIs(t, err, ErrNotHeld)
		holders, err := rdb.HGetAll(ctx, lockKey("nochan")).Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{outer.Owner(): "1"}, holders, "the release wrote before it failed")
		require.Positive(t, rdb.PTTL(ctx, lockKey("nochan")).Val())
		require.NoError(t, outer.Context().Err(), "the handle is still held and may retry")
	}
	stop()
	require.ErrorIs(t, <-waited, context.Canceled)
	require.NoError(t, rdb.Del(ctx, lockKey("nochan")).Err())
}

// While a slot migrates, a key already moved is answered -ASK by the old
// node, and go-redis must send ASKING to the new one first. The watchdog's
// renewal is a single-key script, so it goes through: with ACLClusterRules
// the lock is kept, and a user without +asking loses it. (Multi-key scripts,
// acquire and release, get TRYAGAIN until the slot has moved.)
func TestACLClusterRulesDuringSlotMigration(t *testing.T) {
	ctx := testCtx(t)
	cl := redistest.StartCluster(t, 3)
	from, to := cl.Nodes[0], cl.Nodes[1]
	all := strings.Fields(ACLClusterRules)
	for user, rules := range map[string][]string{
		"full":     all,
		"noasking": slices.DeleteFunc(slices.Clone(all), func(r string) bool { return r == "+asking" }),
	} {
		for _, n := range cl.Nodes {
			require.NoError(t, n.Admin().ACLSetUser(ctx, user, append([]string{"reset", "on", ">" + aclPassword}, rules...)...).Err())
		}
	}
	const lease = 600 * time.Millisecond
	type held struct {
		l    *Lock
		c    *Client
		slot int
	}
	holds := map[string]held{}
	for i, user := range []string{"full", "noasking"} {
		c, err := New(cl.ClusterClient(func(o *redis.ClusterOptions) { o.Username, o.Password = user, aclPassword }),
			WithWatchdogLease(lease))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		name := cl.TagOn(t, from, fmt.Sprintf("migrating%d-", i))
		l, err := c.Lock(ctx, name)
		require.NoError(t, err)
		slot := slot.Of(name)
		// Half-way through a migration: the lock's keys have moved, the
		// slot has not.
		require.NoError(t, to.Admin().Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID).Err())
		require.NoError(t, from.Admin().Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID).Err())
		require.NoError(t, from.Admin().Do(ctx, "MIGRATE", "127.0.0.1", to.Port, "", 0, 5000,
			"KEYS", lockKey(name), lockKey(name)+":fence").Err())
		holds[user] = held{l, c, slot}
	}
	time.Sleep(2 * lease) // renewals that must go through ASK

	require.NoError(t, holds["full"].l.Context().Err(), "renewal during the migration failed")
	require.Zero(t, holds["full"].c.RenewalStats().Failed)
	for _, n := range cl.Nodes {
		entries, err := n.Admin().ACLLog(ctx, 100).Result()
		require.NoError(t, err)
		for _, e := range entries {
			require.NotEqual(t, "full", e.Username, "denied %s on %s", e.Object, n.Addr)
		}
	}
	require.ErrorIs(t, context.Cause(holds["noasking"].l.Context()), ErrLockLost)
	entries, err := to.Admin().ACLLog(ctx, 100).Result()
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(entries, func(e *redis.ACLLogEntry) bool {
		return e.Username == "noasking" && e.Object == "asking"
	}), "%v", entries)

	for _, h := range holds { // finish the migration; then the lock can be released
		for _, n := range []*redistest.Node{to, from, cl.Nodes[2]} {
			require.NoError(t, n.Admin().Do(ctx, "CLUSTER", "SETSLOT", h.slot, "NODE", to.ID).Err())
		}
	}
	require.Eventually(t, func() bool { return holds["full"].l.Unlock(ctx) == nil }, 5*time.Second, 50*time.Millisecond)
}
