package reentrant

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Grant is a grant message, as a waiter's client receives it.
type Grant struct {
	Waiter string // the waiter it is addressed to
	Lock   string // the name of the lock or resource it grants
	// Kind is the kind of the multi-holder resource it grants; empty for
	// a plain lock.
	Kind Kind
	// Mode is the granted hold's mode, of a multi-holder resource; empty
	// for a plain lock.
	Mode Mode
	// Weight is how much of a multi-holder resource's size the granted
	// hold takes (the permits, for a semaphore); zero for a plain lock.
	Weight int64
	Token  uint64 // the token of the hold it grants
	Owner  string // the owner the hold was granted to
	// Unconfirmed is the lease the hold has until its waiter confirms the
	// grant (a renewal, or a look), where liveness is judged by key; zero
	// when the grant already has the lease the waiter asked for.
	Unconfirmed time.Duration
}

// grantBody is one grant in a message: the token (a string, which cjson
// does not round), the owner, the mode and the permits (of a multi-holder
// resource; a mode of a read-write lock says its weight) and, where the
// grant's lease holds only until confirmed, that lease in ms.
type grantBody struct {
	Token       string `json:"t"`
	Owner       string `json:"o"`
	Mode        Mode   `json:"m"`
	Permits     int64  `json:"n"`
	Unconfirmed int64  `json:"u"`
}

// weight is the weight of a grant of mode with permits: zero for none (a
// plain lock's grant), -1 for a mode or permits no grant has.
func weight(mode Mode, permits int64) int64 {
	switch {
	case mode == "" && permits == 0:
		return 0
	case mode == ModeRead && permits == 0:
		return 1
	case mode == ModeWrite && permits == 0:
		return WriteWeight
	case mode == ModePermits && permits >= 1 && permits <= MaxSize:
		return permits
	}
	return -1
}

// ParseGrant reads a grant message addressed to one waiter: the waiter's
// ID, a space, and a JSON object. A plain lock's object has the lock's
// hash key (k) and the grant's fields (see grantBody); a multi-holder
// resource's has the resource's hash key (k) and, by waiter ID, the grants
// of every waiter the message was addressed to (g). notify hands a waiter
// the payload of a message addressed to several; the waiter reads it as
// addressed to itself.
func ParseGrant(msg string) (Grant, error) {
	grants, err := ParseGrants(msg)
	if err != nil {
		return Grant{}, err
	}
	if len(grants) != 1 {
		return Grant{}, fmt.Errorf("reentrant: a grant message to %d waiters: %q", len(grants), msg)
	}
	return grants[0], nil
}

// ParseGrants reads a grant message addressed to one or more waiters (IDs
// separated by commas, a space, then the object ParseGrant describes) and
// returns each waiter's grant, in the order of the address.
func ParseGrants(msg string) ([]Grant, error) {
	addr, body, _ := strings.Cut(msg, " ")
	var m struct {
		grantBody
		Hash   string               `json:"k"`
		Grants map[string]grantBody `json:"g"`
	}
	bad := fmt.Errorf("reentrant: not a grant message: %q", msg)
	if err := json.Unmarshal([]byte(body), &m); err != nil || addr == "" {
		return nil, bad
	}
	// The name is the hash tag: the prefix cannot contain a brace. What
	// follows it names the kind: nothing for a plain lock.
	from, to := strings.IndexByte(m.Hash, '{'), strings.LastIndexByte(m.Hash, '}')
	if from < 0 || to <= from {
		return nil, bad
	}
	kind := Kind(strings.TrimPrefix(m.Hash[to+1:], ":"))
	ids := strings.Split(addr, ",")
	if (kind == "") != (m.Grants == nil) || kind == "" && len(ids) != 1 || kind != "" && kind != KindRW && kind != KindSemaphore {
		return nil, bad
	}
	grants := make([]Grant, len(ids))
	for i, id := range ids {
		g, ok := m.grantBody, true
		if kind != "" {
			g, ok = m.Grants[id]
		}
		token, err := strconv.ParseUint(g.Token, 10, 64)
		n := weight(g.Mode, g.Permits)
		if !ok || err != nil || id == "" || (kind == "") != (g.Mode == "") || n < 0 {
			return nil, bad
		}
		grants[i] = Grant{Waiter: id, Lock: m.Hash[from+1 : to], Kind: kind, Mode: g.Mode, Weight: n, Token: token,
			Owner: g.Owner, Unconfirmed: time.Duration(g.Unconfirmed) * time.Millisecond}
	}
	return grants, nil
}
