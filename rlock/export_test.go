package rlock

import (
	"sync"
	"time"
)

// hooks are the functions tests set per Client, which the test seams
// (client.go) run.
var hooks struct {
	mu                sync.Mutex // guards both maps
	afterFirstAttempt map[*Client]func()
	beforeJoin        map[*Client]func()
}

func init() {
	afterFirstAttempt = func(c *Client) { runHook(&hooks.afterFirstAttempt, c) }
	beforeJoin = func(c *Client) { runHook(&hooks.beforeJoin, c) }
}

// runHook runs the hook in set for c, if any.
func runHook(set *map[*Client]func(), c *Client) {
	hooks.mu.Lock()
	f := (*set)[c]
	hooks.mu.Unlock()
	if f != nil {
		f()
	}
}

// setHook makes f c's hook in *set; nil removes it.
func setHook(set *map[*Client]func(), c *Client, f func()) {
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	if *set == nil {
		*set = map[*Client]func(){}
	}
	if f == nil {
		delete(*set, c)
		return
	}
	(*set)[c] = f
}

// SetAfterFirstAttempt installs a hook that runs between step 1 (the first
// failed acquire) and step 2 (the subscribe) of c's wait loop.
func (c *Client) SetAfterFirstAttempt(f func()) { setHook(&hooks.afterFirstAttempt, c, f) }

// SetBeforeJoin installs a hook that runs in c's adopt between finding the
// hold to join and joining it.
func (c *Client) SetBeforeJoin(f func()) { setHook(&hooks.beforeJoin, c, f) }

// ValidAt reports whether l's hold was valid at t by its validity clock,
// the one the library checks before it hands a hold over.
func (l *Lock) ValidAt(t time.Time) bool { return !l.hold.validity.passed(t) }

// LockOnAll is lockOnAll, for the external test package's quorum waiting
// attacks.
var LockOnAll = lockOnAll
