package reentrant

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A multi-holder grant message carries, by waiter ID, the grant of each
// waiter it is addressed to; a waiter reads the payload as addressed to
// itself alone (as notify hands it over), and anything else is refused.
func TestParseSharedGrants(t *testing.T) {
	rw, err := ParseGrant(`a {"k":"app:{x}:rw","g":{"a":{"t":"7","o":"A","m":"w"}}}`)
	require.NoError(t, err)
	require.Equal(t, Grant{Waiter: "a", Lock: "x", Kind: KindRW, Mode: ModeWrite, Weight: WriteWeight, Token: 7, Owner: "A"}, rw)

	msg := `a,b {"k":"app:{pool}:sem","g":{"a":{"t":"7","o":"A","m":"p","n":1},"b":{"t":"8","o":"B b","m":"p","n":3,"u":150}}}`
	gs, err := ParseGrants(msg)
	require.NoError(t, err)
	require.Equal(t, []Grant{
		{Waiter: "a", Lock: "pool", Kind: KindSemaphore, Mode: ModePermits, Weight: 1, Token: 7, Owner: "A"},
		{Waiter: "b", Lock: "pool", Kind: KindSemaphore, Mode: ModePermits, Weight: 3, Token: 8, Owner: "B b",
			Unconfirmed: 150 * time.Millisecond},
	}, gs)
	_, err = ParseGrant(msg)
	require.Error(t, err, "addressed to two")
	_, payload, _ := strings.Cut(msg, " ")
	g, err := ParseGrant("b " + payload)
	require.NoError(t, err)
	require.Equal(t, gs[1], g)
	k, err := Namespace{Prefix: "app:"}.SharedKeys(KindSemaphore, "pool")
	require.NoError(t, err)
	share, err := k.Granted(g)
	require.NoError(t, err)
	require.Equal(t, ModePermits, share.Mode())
	require.EqualValues(t, 3, share.Weight())
	other, err := Namespace{}.SharedKeys(KindRW, "pool")
	require.NoError(t, err)
	_, err = other.Granted(g)
	require.ErrorIs(t, err, ErrInvalidKind)

	for _, bad := range []string{
		`c {"k":"app:{pool}:sem","g":{"a":{"t":"7","o":"A","m":"p"}}}`,                              // not among the grants
		`a {"k":"app:{pool}:sem","g":{"a":{"t":"x","o":"A","m":"p"}}}`,                              // no token
		`a {"k":"app:{pool}:sem","g":{"a":{"t":"7","o":"A"}}}`,                                      // no mode
		`a {"k":"app:{pool}:sem","g":{"a":{"t":"7","o":"A","m":"p"}}}`,                              // no permits
		`a {"k":"app:{pool}:rw","g":{"a":{"t":"7","o":"A","m":"r","n":2}}}`,                         // permits of a read
		`a {"k":"app:{pool}:mutex","g":{"a":{"t":"7","o":"A","m":"p"}}}`,                            // no such kind
		`a {"k":"app:{pool}","g":{"a":{"t":"7","o":"A","m":"p"}}}`,                                  // a lock's key
		`a {"k":"app:{pool}:rw","t":"7","o":"A"}`,                                                   // no grants
		`a,b {"t":"7","o":"A","k":"app:{pool}"}`,                                                    // a lock's grant to two
		`a, {"k":"app:{pool}:rw","g":{"a":{"t":"7","o":"A","m":"r"},"":{"t":"7","o":"A","m":"r"}}}`, // an empty ID
	} {
		_, err := ParseGrants(bad)
		require.Error(t, err, "%q", bad)
	}
}
