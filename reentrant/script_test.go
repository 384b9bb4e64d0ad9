package reentrant

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testLua reads a test-only Lua file of testdata/lua.
func testLua(t *testing.T, name string) luaFile {
	t.Helper()
	text, err := os.ReadFile("testdata/lua/" + name)
	require.NoError(t, err)
	return luaFile{name, string(text)}
}

// lineOf is the line of file that contains code, counted from 1.
func lineOf(t *testing.T, f luaFile, code string) int {
	t.Helper()
	for i, line := range strings.Split(f.text, "\n") {
		if strings.Contains(line, code) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", f.name, code)
	return 0
}

// requireLocated checks that err is a located script error at file:line,
// still a Redis error reply as rlock's isServerReply reads it, and still
// carrying the server's reply with its prefix.
func requireLocated(t *testing.T, err error, where, prefix string) {
	t.Helper()
	require.Error(t, err)
	require.Regexp(t, regexp.QuoteMeta(where)+"[:.]", err.Error(), "the error names the file and line")
	require.NotContains(t, err.Error(), "user_script", "no line of the whole script is left")
	var reply redis.Error
	require.True(t, errors.As(err, &reply), "a located error is still a Redis error reply: %v", err)
	require.True(t, strings.HasPrefix(reply.Error(), prefix+" "), "%v", err)
}

// A script's error names the file and the line it comes from, though the
// library runs before the file: in the file, and in the library.
func TestScriptErrorsNameTheirFileAndLine(t *testing.T) {
	ctx, rdb, l := setup(t, "errors")

	fail := testLua(t, "fail.lua")
	s := newScript(append(luaFiles(library...), fail)...)
	err := s.Run(ctx, rdb, []string{l.Hash}).Err()
	line := lineOf(t, fail, "error('failed on purpose')")
	requireLocated(t, err, "fail.lua:"+strconv.Itoa(line), "ERR")
	require.Contains(t, err.Error(), "@fail.lua:"+strconv.Itoa(line)+".", "Redis's own mention of the line too")
	var raw redis.Error
	require.True(t, errors.As(err, &raw))
	require.Contains(t, raw.Error(), "user_script:", "the reply itself is as the server sent it")

	// A queue that is not a list fails the grant inside the library, at
	// the LINDEX that reads the queue's head.
	a, err := l.AcquireNew(ctx, rdb, "A", testLease, Waiter{})
	require.NoError(t, err)
	require.NoError(t, rdb.Set(ctx, l.Queue, "not a list", 0).Err())
	_, err = l.Release(ctx, rdb, "A", a.Token, "rel")
	grant := luaFiles("grant.lua")[0]
	requireLocated(t, err, "grant.lua:"+strconv.Itoa(lineOf(t, grant, "local rec = redis.call('lindex', queue, 0)")), "WRONGTYPE")
	require.Contains(t, err.Error(), "reentrant: release", "the error names the operation")

	// A script alone, run one at a time and in RenewAll's pipeline.
	require.NoError(t, rdb.Set(ctx, l.Hash, "not a hash", 0).Err())
	renew := luaFiles("renew.lua")[0]
	at := "renew.lua:" + strconv.Itoa(lineOf(t, renew, "redis.call('hexists'"))
	_, err = l.Renew(ctx, rdb, "A", a.Token, testLease)
	requireLocated(t, err, at, "WRONGTYPE")
	renewed, errs := RenewAll(ctx, rdb, [][]HoldRef{{{Keys: l, Owner: "A", Token: a.Token}}}, testLease)
	requireLocated(t, errs[0], at, "WRONGTYPE")
	require.Nil(t, renewed[0])
}

// A syntax error at the end of the last file is located at that file's
// end; an error that names no line is left as it is.
func TestScriptErrorLocationEdges(t *testing.T) {
	ctx, rdb, _ := setup(t, "error-edges")
	cut := newScript(append(luaFiles(library...), luaFile{"cut.lua", "local a =\n"})...)
	requireLocated(t, cut.Run(ctx, rdb, nil).Err(), "cut.lua:2", "ERR")

	custom := newScript(luaFile{"custom.lua", "return redis.error_reply('MYERR no line here')\n"})
	err := custom.Run(ctx, rdb, nil).Err()
	require.EqualError(t, err, "MYERR no line here")
	var reply redis.Error
	require.True(t, errors.As(err, &reply))

	plain := errors.New("dial tcp: refused")
	require.Same(t, plain, custom.locate(plain))
}
