package reentrant

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaDir holds the scripts' sources, one file each, and the library files
// that several of them share.
//
//go:embed lua/*.lua
var luaDir embed.FS

// library is what every script that can leave a lock free runs before its
// own file, in this order: the server's role (requireMaster, which the
// scripts that take or renew a hold call first, and writeProbe before a
// grant), the fencing token, the queue record's reader, publishing a grant
// and the grant. Its files define local functions (and master.lua the
// answer it keeps for one run) only, and read no KEYS or ARGV.
var library = []string{"master.lua", "token.lua", "record.lua", "publish.lua", "grant.lua"}

// sharedLibrary is what every script of a shared resource that can
// grant runs before its own file: library's first four files, then the
// holds (shared.lua) and their grant (shared_grant.lua). Scripts that only
// read holds run token.lua and shared.lua; the renewal script runs them
// after master.lua, with both kinds' renewals (see renewScript).
var sharedLibrary = []string{"master.lua", "token.lua", "record.lua", "publish.lua", "shared.lua", "shared_grant.lua"}

// luaFile is one Lua source file: its name in lua/ and its text.
type luaFile struct{ name, text string }

// luaFiles reads the named files of lua/. A missing file is a build
// mistake, found when the package loads.
func luaFiles(names ...string) []luaFile {
	files := make([]luaFile, len(names))
	for i, name := range names {
		text, err := luaDir.ReadFile("lua/" + name)
		if err != nil {
			panic("reentrant: " + err.Error())
		}
		files[i] = luaFile{name, string(text)}
	}
	return files
}

// script is one Lua script as Redis runs it: its files joined in order,
// each starting on a line of its own. Redis numbers the lines of the whole
// (user_script:N); the script knows where each file starts, so that its
// errors name the file and the line in it.
type script struct {
	*redis.Script
	parts []scriptPart
}

// scriptPart is where one file lies in a script: from line first of the
// whole, for lines lines.
type scriptPart struct {
	file         string
	first, lines int
}

// newScript joins files into one script.
func newScript(files ...luaFile) *script {
	s := &script{}
	var src strings.Builder
	line := 1
	for _, f := range files {
		text := f.text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		n := strings.Count(text, "\n")
		s.parts = append(s.parts, scriptPart{file: f.name, first: line, lines: n})
		src.WriteString(text)
		line += n
	}
	s.Script = redis.NewScript(src.String())
	return s
}

// plainScript is the script of file alone.
func plainScript(file string) *script { return newScript(luaFiles(file)...) }

// grantingScript is the script of files, the last of which can leave a
// lock free: the library runs first, so that it can grant.
func grantingScript(files ...string) *script {
	return newScript(luaFiles(slices.Concat(library, files)...)...)
}

// freePathScript is the script of head, then the library, then tail:
// head ends every call that needs no grant (the free path among them)
// before the library's functions are made, which would cost those calls
// more server time than the rest of their script. tail reads head's
// locals. A library file head already runs is not run again.
func freePathScript(head []string, tail string) *script {
	files := slices.Clone(head)
	for _, f := range library {
		if !slices.Contains(head, f) {
			files = append(files, f)
		}
	}
	return newScript(luaFiles(append(files, tail)...)...)
}

// sharedScript is the script of files, the last of which is a shared
// resource's and can grant: the shared library runs first.
func sharedScript(files ...string) *script {
	return newScript(luaFiles(slices.Concat(sharedLibrary, files)...)...)
}

// Run runs the script by EVALSHA (EVAL when the server has not cached it),
// with its error located (see locate) and, when the script failed for a
// reason the caller can act on, matching its sentinel (see typed).
func (s *script) Run(ctx context.Context, rdb redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := s.Script.Run(ctx, rdb, keys, args...)
	if err := cmd.Err(); err != nil {
		cmd.SetErr(typed(s.locate(err)))
	}
	return cmd
}

// typed is err, a script's error, also matching ErrTokenOverflow when the
// script failed with token.lua's TOKENRANGE (tokenOverflow).
func typed(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "TOKENRANGE ") {
		return fmt.Errorf("%w: %w", ErrTokenOverflow, err)
	}
	return err
}

// scriptLine is how Redis names a line of a script in its errors:
// "user_script:N: <error>" where the Lua error was raised, and "on
// @user_script:N." after it.
var scriptLine = regexp.MustCompile(`user_script:(\d+)`)

// locate returns err with every line of the script it names as the file
// and line it comes from ("acquire.lua:42", "grant.lua:7"). The result
// wraps err, so it still matches redis.Error with errors.As: the server
// answered, so the call ran and failed rather than possibly ran unseen
// (what the script wrote before the error stays). An error that names no
// line is returned as it is.
func (s *script) locate(err error) error {
	var reply redis.Error
	if !errors.As(err, &reply) || !scriptLine.MatchString(err.Error()) {
		return err
	}
	msg := scriptLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "user_script:"))
		return s.where(n, m)
	})
	return &scriptError{msg: msg, err: err}
}

// where is line n of the whole script as "<file>:<line>". Past the end
// (a syntax error at the end of the source) is the last file's; before
// the start, unknown.
func (s *script) where(n int, unknown string) string {
	for i, p := range s.parts {
		if n >= p.first && (n < p.first+p.lines || i == len(s.parts)-1) {
			return p.file + ":" + strconv.Itoa(n-p.first+1)
		}
	}
	return unknown
}

// scriptError is an error reply to a script, its lines located.
type scriptError struct {
	msg string
	err error // the reply as the server sent it: a redis.Error
}

// Error is the reply's message, its lines located.
func (e *scriptError) Error() string { return e.msg }

// Unwrap is the reply as the server sent it.
func (e *scriptError) Unwrap() error { return e.err }
