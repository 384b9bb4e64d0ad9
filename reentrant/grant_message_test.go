package reentrant

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Reading a grant's body by hand never differs from encoding/json: what
// it reads, encoding/json reads the same.
func FuzzGrantBodyMatchesJSON(f *testing.F) {
	for _, seed := range []string{
		`{"t":"1795476559178986","o":"c1:0a1b","k":"baton:{orders}"}`,
		`{"k":"app:{n}","u":150,"o":"B","t":"7"}`, `{}`, ``, `{"t":"1"}`,
		`{"t":"1","t":"2"}`, `{"T":"1"}`, `{"x":1,"t":"1"}`, `{"t":1}`, `{"u":"1"}`,
		`{"u":-1}`, `{"u":0150}`, `{"u":1.5}`, `{"u":1e3}`, `{"u":99999999999999999999}`, `{"u":0}`,
		`{"o":"a\/b"}`, `{"o":"a\"b"}`, `{"o":"tab	in"}`, "{\"o\":\"\xff\"}", `{"o":"ünï 🔒"}`,
		` {"t":"1"}`, `{"t":"1"} `, `{"t" :"1"}`, `{"t":"1",}`, `{"t":"1"}x`, `{"t":null}`, `{,}`, `{"t":"1"`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, ok := quickPlainBody(body)
		if !ok {
			return // ParseGrants reads it with encoding/json
		}
		var want plainBody
		require.NoError(t, json.Unmarshal([]byte(body), &want), "read by hand, refused by encoding/json")
		require.Equal(t, want, got)
	})
}

// A JSON string is read as encoding/json reads it wherever that is valid
// UTF-8; elsewhere encoding/json replaces each invalid byte, which
// quickString keeps.
func FuzzQuickStringMatchesJSON(f *testing.F) {
	for _, seed := range []string{`"a"`, `"a\/b"`, `"\u00e9\u0009"`, `"\ud83d\udd12"`, "\"\xff\"", `"\x"`, `"a`, `""`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		got, rest, ok := quickString(lit)
		if !ok || rest != "" {
			return
		}
		var want string
		require.NoError(t, json.Unmarshal([]byte(lit), &want), "read by hand, refused by encoding/json")
		require.Equal(t, want, string([]rune(string(got))), "each invalid byte is U+FFFD to encoding/json")
	})
}

// The grants the scripts publish take the hand-read path, even for
// owners and names with spaces and non-ASCII text.
func TestScriptGrantsAreReadByHand(t *testing.T) {
	ctx, rdb, l := setup(t, "ünï code/ lock")
	sub, w := subscribed(t, rdb, l, "w1")
	r, err := l.Acquire(ctx, rdb, "A", "r1", testLease, 0, Waiter{})
	require.NoError(t, err)
	_, err = l.Acquire(ctx, rdb, "job 7 🔒", "r2", testLease, 0, w)
	require.NoError(t, err)
	_, err = l.Release(ctx, rdb, "A", r.Token, "r3")
	require.NoError(t, err)
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	_, body, _ := strings.Cut(msg.Payload, " ")
	m, ok := quickPlainBody(body)
	require.True(t, ok, "%s", body)
	require.Equal(t, jsonText("job 7 🔒"), m.Owner)
	require.Equal(t, jsonText(l.Hash), m.Hash)
}

// BenchmarkParseGrant reads a grant message as the waiter does on its way
// out of Lock, for a plain name and for one with a '/', which cjson
// escapes.
func BenchmarkParseGrant(b *testing.B) {
	for _, name := range []string{"orders", "orders/42"} {
		body, err := json.Marshal(map[string]string{"t": "1795476559178986", "o": "3f2a9c1e0b7d4a65:9e1f0c2b7a3d4e5f8a6b1c0d2e3f4a5b", "k": "baton:{" + name + "}"})
		require.NoError(b, err)
		msg := "5c2e9a0f1b3d7e48 " + strings.ReplaceAll(string(body), "/", `\/`)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseGrant(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A shared grant message carries, by waiter ID, the grant of each
// waiter it is addressed to; a waiter reads the payload as addressed to
// itself alone (as notify hands it over), and anything else is refused.
func TestParseSharedGrants(t *testing.T) {
	rw, err := ParseGrant(`a {"k":"app:{x}:rw","g":{"a":{"t":"7","h":"11","o":"A","m":"w"}}}`)
	require.NoError(t, err)
	require.Equal(t, Grant{Waiter: "a", Lock: "x", Kind: KindRW, Mode: ModeWrite, Weight: WriteWeight, Token: 7, Owner: "A",
		hold: 11}, rw)
	require.EqualValues(t, 11, rw.HoldID())
	_, err = ParseGrant(`a {"k":"app:{x}:rw","g":{"a":{"t":"7","o":"A","m":"w"}}}`)
	require.Error(t, err, "a shared resource's grant with no hold ID")

	msg := `a,b {"k":"app:{pool}:sem","g":{"a":{"t":"7","h":"7","o":"A","m":"p","n":1},"b":{"t":"8","h":"9","o":"B b","m":"p","n":3,"u":150}}}`
	gs, err := ParseGrants(msg)
	require.NoError(t, err)
	require.Equal(t, []Grant{
		{Waiter: "a", Lock: "pool", Kind: KindSemaphore, Mode: ModePermits, Weight: 1, Token: 7, Owner: "A", hold: 7},
		{Waiter: "b", Lock: "pool", Kind: KindSemaphore, Mode: ModePermits, Weight: 3, Token: 8, Owner: "B b",
			Unconfirmed: 150 * time.Millisecond, hold: 9},
	}, gs)
	_, err = ParseGrant(msg)
	require.Error(t, err, "addressed to two")
	_, payload, _ := strings.Cut(msg, " ")
	g, err := ParseGrant("b " + payload)
	require.NoError(t, err)
	require.Equal(t, gs[1], g)
	k, err := Namespace{Prefix: "app:"}.SharedKeys(KindSemaphore, "pool")
	require.NoError(t, err)
	mode, err := k.ModeOf(g)
	require.NoError(t, err)
	require.Equal(t, ModePermits, mode.Mode())
	require.EqualValues(t, 3, mode.Weight())
	other, err := Namespace{}.SharedKeys(KindRW, "pool")
	require.NoError(t, err)
	_, err = other.ModeOf(g)
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

// A GrantReader reads each waiter's grant as ParseGrant reads the message
// addressed to that waiter alone, and decodes a payload that several
// waiters share once: a batch of k reads costs k look-ups, not k decodes.
func TestGrantReaderDecodesASharedPayloadOnce(t *testing.T) {
	var r GrantReader
	plain := `{"t":"5","o":"O","k":"baton:{x}"}`
	g, err := r.Grant("w", plain)
	require.NoError(t, err)
	require.Equal(t, Grant{Waiter: "w", Lock: "x", Token: 5, Owner: "O"}, g)

	grants := map[string]string{}
	var ids []string
	for i := range 100 {
		id := fmt.Sprint("r", i)
		ids = append(ids, id)
		grants[id] = fmt.Sprintf(`{"t":"9","h":"%d","o":"R%d","m":"r"}`, 10+i, i)
	}
	body, err := json.Marshal(map[string]any{"k": "baton:{x}:rw", "g": rawGrants(grants)})
	require.NoError(t, err)
	payload := string(body)
	want, err := ParseGrants(strings.Join(ids, ",") + " " + payload)
	require.NoError(t, err)
	for i, id := range ids {
		g, err := r.Grant(id, payload)
		require.NoError(t, err)
		require.Equal(t, want[i], g)
	}
	decodes := testing.AllocsPerRun(10, func() {
		for _, id := range ids {
			if _, err := r.Grant(id, payload); err != nil {
				t.Fatal(err)
			}
		}
	})
	require.Zero(t, decodes, "the shared payload is decoded again")

	for _, bad := range []struct{ id, payload string }{
		{"nobody", payload}, {"", payload}, {"r1,r2", payload}, {"w", `{"k":"baton:{x}:rw"}`}, {"w", "not json"},
		{"w", `{"t":"x","o":"O","k":"baton:{x}"}`}, // a plain grant without a token
	} {
		_, err := r.Grant(bad.id, bad.payload)
		require.Error(t, err, "%q %q", bad.id, bad.payload)
	}
}

// rawGrants makes a JSON object of grants already encoded.
func rawGrants(grants map[string]string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(grants))
	for id, g := range grants {
		out[id] = json.RawMessage(g)
	}
	return out
}

// A shared grant message carries any name and owner byte for byte,
// invalid UTF-8 included: encoding/json would replace those bytes, and the
// client could then neither claim the grant nor pass on one whose waiter
// has gone. (TestQueueRecordsKeepAnyOwner checks a plain lock's.)
func TestSharedGrantsCarryInvalidUTF8Losslessly(t *testing.T) {
	const name, owner = "bad\xffname", "job\xfe7"
	ctx, rdb, _ := setup(t, name)
	k := sharedKeys(t, Namespace{}, KindRW, name, 0)
	read, write := rw(t, k)
	wr, err := write.AcquireNew(ctx, rdb, "W", testLease, Waiter{})
	require.NoError(t, err)
	c := newClient(t, rdb, k, "c")
	_, err = read.Acquire(ctx, rdb, owner, "r4", testLease, 0, c.waiter("r"))
	require.NoError(t, err)
	_, err = write.Release(ctx, rdb, "W", wr.Token, "r5")
	require.NoError(t, err)
	gs := c.grants(t)
	require.Len(t, gs, 1)
	require.Equal(t, name, gs[0].Lock)
	require.Equal(t, owner, gs[0].Owner)
	mode, err := k.ModeOf(gs[0])
	require.NoError(t, err, "the grant names the resource it came from")
	require.Equal(t, ModeRead, mode.Mode())
}
