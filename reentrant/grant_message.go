package reentrant

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Grant is a grant message, as a waiter's client receives it.
type Grant struct {
	Waiter string // the waiter it is addressed to
	Lock   string // the name of the lock it grants
	Token  uint64 // the token of the hold it grants
	Owner  string // the owner the hold was granted to
	// Unconfirmed is the lease the hold has until its waiter confirms the
	// grant (a renewal, or a look), where liveness is judged by key; zero
	// when the grant already has the lease the waiter asked for.
	Unconfirmed time.Duration
}

// ParseGrant reads a grant message: the waiter's ID, a space, and a JSON
// object with the token (a string), the owner, the lock's hash key and,
// where the grant's lease holds only until confirmed, that lease in ms.
func ParseGrant(msg string) (Grant, error) {
	waiter, body, _ := strings.Cut(msg, " ")
	m, err := decodeGrantBody(body)
	token, terr := strconv.ParseUint(m.Token, 10, 64)
	// The name is the hash tag: the prefix cannot contain a brace.
	from, to := strings.IndexByte(m.Hash, '{'), strings.LastIndexByte(m.Hash, '}')
	if err != nil || terr != nil || waiter == "" || from < 0 || to <= from {
		return Grant{}, fmt.Errorf("reentrant: not a grant message: %q", msg)
	}
	return Grant{Waiter: waiter, Lock: m.Hash[from+1 : to], Token: token, Owner: m.Owner,
		Unconfirmed: time.Duration(m.Unconfirmed) * time.Millisecond}, nil
}
