package rlock

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// A lock holder in a process of its own, which a test can stop or kill
// without stopping itself: the test binary re-runs itself with helperEnv
// set, and TestHelperProcess plays the holder.
const (
	helperEnv    = "BATON_TEST_HELPER" // the role: "holder" or "checker" (family_child_test.go)
	helperAddr   = "BATON_TEST_REDIS"  // the server's address
	helperLock   = "BATON_TEST_LOCK"   // the lock's name
	helperLease  = "BATON_TEST_LEASE"  // the watchdog lease
	helperWire   = "BATON_TEST_WIRE"   // WithRedissonWire's client ID, if set
	helperKind   = "BATON_TEST_KIND"   // the familyMember's kind the child plays; the plain lock if unset
	helperWeight = "BATON_TEST_WEIGHT" // the weight the holder takes; the member's size if unset
	helperFixed  = "BATON_TEST_FIXED"  // a fixed lease (WithLease) for the holder's hold; the watchdog's if unset
	// helperSentinel, if set, is a sentinel's address: the child's locks
	// go through a failover client on it (redistest.SentinelMaster), not
	// to helperAddr; helperLedger then is the server of the keys that are
	// not a lock's (the multi-process checker's).
	helperSentinel = "BATON_TEST_SENTINEL"
	helperLedger   = "BATON_TEST_LEDGER"
	helperPrefix   = "helper: " // marks the child's protocol lines on stdout

	// childClientName names the child's connections in CLIENT LIST.
	childClientName = "baton-test-child"
)

// fenceScript is the storage a lock protects, in miniature: it accepts a
// write only with a token at least as high as any it has seen.
var fenceScript = redis.NewScript(`
local seen = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
if tonumber(ARGV[1]) < seen then return 0 end
redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])
return 1`)

// fencedWrite stores value in key if token is not stale, and reports
// whether it did.
func fencedWrite(ctx context.Context, rdb redis.Scripter, key string, token uint64, value string) (bool, error) {
	n, err := fenceScript.Run(ctx, rdb, []string{key}, token, value).Int()
	return n == 1, err
}

// TestHelperProcess is not a test: it is the child process of the fault
// tests. It takes the lock, writes to the fenced store, says "locked", and
// then obeys one command per line on stdin:
//
//	write  — write to the store again with its token, as a holder that
//	         does not know it was paused would
//	check  — look at Context().Err() once, at once, and report it and
//	         whether the cause matches ErrLockLost
//	lost   — wait (bounded) for Context() to end and report the cause
//	unlock — Unlock and report the error
//	relock — take the lock again, as at the start
//
// With helperKind set it takes that familyMember's resource of that name
// instead (helperWeight of it: an RW lock's read or write, or permits), on
// helperFixed's fixed lease if set. In the role "checker" it is a child of
// the multi-process checker instead (runFamilyChild).
func TestHelperProcess(t *testing.T) {
	var err error
	switch os.Getenv(helperEnv) {
	case "holder":
		err = runHolder(os.Stdin, os.Stdout)
	case "checker":
		err = runFamilyChild(os.Stdin)
	default:
		t.Skip("the child process of the fault tests")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // the test's own output goes to stdout, which the parent reads for its protocol
		t.Fatal(err)
	}
}

func runHolder(in io.Reader, out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, helperPrefix+format+"\n", args...) }
	lease, err := time.ParseDuration(os.Getenv(helperLease))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb, store := childClients()
	defer rdb.Close()
	defer store.Close()
	opts := []Option{WithWatchdogLease(lease)}
	if id := os.Getenv(helperWire); id != "" {
		opts = append(opts, WithRedissonWire(id))
	}
	c, err := New(rdb, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	take, err := holderTake(c, os.Getenv(helperLock))
	if err != nil {
		return err
	}
	h, err := take(ctx)
	if err != nil {
		return err
	}
	ok, err := fencedWrite(ctx, store, "store", h.token, "child")
	if err != nil {
		return err
	}
	say("locked %d %t", h.token, ok)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "write":
			ok, err := fencedWrite(ctx, store, "store", h.token, "stale")
			say("write %t %v", ok, err)
		case "check":
			err := h.ctx.Err()
			say("check %t %t", err != nil, errors.Is(context.Cause(h.ctx), ErrLockLost))
		case "relock":
			if h, err = take(ctx); err != nil {
				return err
			}
			say("relock %d", h.token)
		case "lost":
			select {
			case <-h.ctx.Done():
				say("lost %t", errors.Is(context.Cause(h.ctx), ErrLockLost))
			case <-time.After(5 * time.Second):
				say("lost timeout")
			}
		case "unlock":
			err := h.give(ctx)
			say("unlock %t %v", errors.Is(err, ErrLockLost), err)
		}
	}
	return sc.Err()
}

// holderTake is how the holder takes its hold of the resource called name
// on c: the member helperKind names (the plain lock if unset), helperWeight
// of it (its size if unset), on helperFixed's fixed lease if set.
func holderTake(c *Client, name string) (func(context.Context) (taken, error), error) {
	m, ok := familyMembers[cmp.Or(os.Getenv(helperKind), plainMember.kind)]
	if !ok {
		return nil, fmt.Errorf("no member %q", os.Getenv(helperKind))
	}
	weight, opts := m.size, []LockOption(nil)
	if w := os.Getenv(helperWeight); w != "" {
		var err error
		if weight, err = strconv.ParseInt(w, 10, 64); err != nil {
			return nil, err
		}
	}
	if f := os.Getenv(helperFixed); f != "" {
		d, err := time.ParseDuration(f)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithLease(d))
	}
	return func(ctx context.Context) (taken, error) { return m.take(ctx, c, name, weight, opts...) }, nil
}

// childClients are a child's connections to the server at helperAddr:
// rdb as the tests' lock user, and plain as the default user, for keys that
// are not a lock's (the fenced store, the multi-process checker). Both carry
// childClientName. With helperSentinel set, rdb is a failover client on
// that sentinel, and plain is on helperLedger.
func childClients() (rdb, plain *redis.Client) {
	o := redistest.Options(os.Getenv(helperAddr))
	o.ClientName = childClientName
	plain = redis.NewClient(&redis.Options{Addr: cmp.Or(os.Getenv(helperLedger), o.Addr), ClientName: childClientName})
	sentinel := os.Getenv(helperSentinel)
	if sentinel == "" {
		return redis.NewClient(o), plain
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: []string{sentinel},
		Username: o.Username, Password: o.Password, ClientName: childClientName}), plain
}

// child is a running helper process, seen from the test.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // protocol lines, without the prefix
	read   chan struct{} // closed when stdout is drained
	stderr bytes.Buffer
	once   sync.Once
}

// startHolder runs a holder of lock name with the given watchdog lease,
// with env added to its environment. It is killed, if still running, when
// the test ends.
func startHolder(t *testing.T, srv *redistest.Server, name string, lease time.Duration, env ...string) *child {
	t.Helper()
	return startChild(t, time.Minute, append([]string{helperEnv + "=holder", helperAddr + "=" + srv.Addr,
		helperLock + "=" + name, helperLease + "=" + lease.String()}, env...)...)
}

// startChild runs TestHelperProcess in a process of its own, with env
// (which names its role) added to its environment, for at most timeout.
// It is killed, if still running, when the test ends.
func startChild(t *testing.T, timeout time.Duration, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), env...)
	ch := &child{t: t, cmd: cmd, lines: make(chan string, 16), read: make(chan struct{})}
	cmd.Stderr = &ch.stderr
	var err error
	if ch.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(ch.read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), helperPrefix); ok {
				select {
				case ch.lines <- line:
				default: // nobody asks any more; stdout must still be drained
				}
			}
		}
	}()
	t.Cleanup(func() {
		ch.kill()
		if t.Failed() {
			t.Logf("child stderr:\n%s", ch.stderr.String())
		}
	})
	return ch
}

// expect returns the next protocol line, which must start with word.
func (ch *child) expect(word string) string {
	ch.t.Helper()
	select {
	case line := <-ch.lines:
		if !strings.HasPrefix(line, word) {
			ch.t.Fatalf("child said %q, want %q...", line, word)
		}
		return line
	case <-time.After(10 * time.Second):
		ch.t.Fatalf("child did not say %q", word)
		return ""
	}
}

// ask sends one command and returns the reply line, which starts with cmd.
// locked waits for the child to hold the lock and returns its token and
// whether the fenced store accepted its first write.
func (ch *child) locked() (token uint64, accepted bool) {
	ch.t.Helper()
	if _, err := fmt.Sscanf(ch.expect("locked"), "locked %d %t", &token, &accepted); err != nil {
		ch.t.Fatalf("child's locked line: %v", err)
	}
	return token, accepted
}

func (ch *child) ask(cmd string) string {
	ch.t.Helper()
	if _, err := io.WriteString(ch.stdin, cmd+"\n"); err != nil {
		ch.t.Fatal(err)
	}
	return ch.expect(cmd)
}

func (ch *child) signal(sig syscall.Signal) {
	ch.t.Helper()
	if err := ch.cmd.Process.Signal(sig); err != nil {
		ch.t.Fatal(err)
	}
}

// finish closes stdin, which ends the holder, and checks that it exited
// cleanly: its own test, with goleak, passed.
func (ch *child) finish() {
	ch.t.Helper()
	_ = ch.stdin.Close()
	<-ch.read
	if err := ch.cmd.Wait(); err != nil {
		ch.t.Fatalf("child: %v\n%s", err, ch.stderr.String())
	}
	ch.once.Do(func() {})
}

// kill sends SIGKILL and waits until the process is reaped. It is
// idempotent and harmless after finish.
func (ch *child) kill() {
	ch.once.Do(func() {
		_ = ch.cmd.Process.Kill() // stopped or not
		_ = ch.stdin.Close()
		<-ch.read
		_ = ch.cmd.Wait()
	})
}

// awaitDisconnected waits until the server has closed every connection of
// the (killed) child: after that, nothing the child sent can still arrive.
func (ch *child) awaitDisconnected(ctx context.Context, rdb *redis.Client) {
	ch.t.Helper()
	require.Eventually(ch.t, func() bool {
		list, err := rdb.ClientList(ctx).Result()
		return err == nil && !strings.Contains(list, "name="+childClientName)
	}, 5*time.Second, 5*time.Millisecond, "the server still has the dead child's connections")
}
