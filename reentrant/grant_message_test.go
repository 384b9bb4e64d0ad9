package reentrant

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Reading a grant's body by hand never differs from encoding/json: the
// same fields, and an error exactly when it has one.
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
		var want grantBody
		wantErr := json.Unmarshal([]byte(body), &want)
		got, err := decodeGrantBody(body)
		require.Equal(t, wantErr == nil, err == nil, "error: json %v, here %v", wantErr, err)
		if err == nil {
			require.Equal(t, want, got)
		}
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
	m, ok := quickGrantBody(body)
	require.True(t, ok, "%s", body)
	require.Equal(t, "job 7 🔒", m.Owner)
	require.Equal(t, l.Hash, m.Hash)
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
