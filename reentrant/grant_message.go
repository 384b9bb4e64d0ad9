package reentrant

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
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

// grantBody is the JSON object of a grant message, as grant.lua's
// cjson.encode writes it.
type grantBody struct {
	Token       string `json:"t"`
	Owner       string `json:"o"`
	Hash        string `json:"k"`
	Unconfirmed int64  `json:"u"`
}

// decodeGrantBody reads body as encoding/json would into a grantBody. A
// grant is read on the waiter's path to Lock's return, where reflection
// over a cold cache costs more than the rest of the wake-up; so the shape
// cjson writes (no spaces, plain strings, an integer u) is read by hand,
// and anything else goes to encoding/json, which then defines the result.
func decodeGrantBody(body string) (grantBody, error) {
	if m, ok := quickGrantBody(body); ok {
		return m, nil
	}
	var m grantBody
	err := json.Unmarshal([]byte(body), &m)
	return m, err
}

// quickGrantBody reads body if it is an object of distinct members t, o
// and k (strings, see quickString) and u (digits, fitting an int64), with
// no space anywhere. It reports false for anything else.
func quickGrantBody(body string) (m grantBody, ok bool) {
	rest, ok := strings.CutPrefix(body, "{")
	if !ok || rest == "}" {
		return m, ok
	}
	var seen uint8
	for {
		var name string
		if name, rest, ok = quickString(rest); !ok {
			return m, false
		}
		i := strings.Index("toku", name)
		if len(name) != 1 || i < 0 || seen&(1<<i) != 0 || !strings.HasPrefix(rest, ":") {
			return m, false
		}
		seen |= 1 << i
		switch rest = rest[1:]; name {
		case "t":
			m.Token, rest, ok = quickString(rest)
		case "o":
			m.Owner, rest, ok = quickString(rest)
		case "k":
			m.Hash, rest, ok = quickString(rest)
		case "u":
			m.Unconfirmed, rest, ok = quickInt(rest)
		}
		switch {
		case !ok:
			return m, false
		case rest == "}":
			return m, true
		case !strings.HasPrefix(rest, ","):
			return m, false
		}
		rest = rest[1:]
	}
}

// quickString reads a JSON string at the start of s, and returns it and
// what follows. It reports false for a \u escape, a control byte or
// invalid UTF-8 (which encoding/json replaces), and for a string that
// does not end. cjson escapes every '/', so a name with one is common.
func quickString(s string) (value, rest string, ok bool) {
	if s, ok = strings.CutPrefix(s, `"`); !ok {
		return "", "", false
	}
	var unescaped []byte // made at the first escape
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			value = s[:i]
			if unescaped != nil {
				value = string(unescaped)
			}
			return value, s[i+1:], utf8.ValidString(value)
		case c < 0x20:
			return "", "", false
		case c == '\\':
			e := -1
			if i+1 < len(s) {
				e = strings.IndexByte(`"\/bfnrt`, s[i+1])
			}
			if e < 0 {
				return "", "", false
			}
			if unescaped == nil {
				unescaped = append(make([]byte, 0, len(s)), s[:i]...)
			}
			unescaped = append(unescaped, "\"\\/\b\f\n\r\t"[e])
			i++
		case unescaped != nil:
			unescaped = append(unescaped, c)
		}
	}
	return "", "", false
}

// quickInt reads a non-negative JSON integer of at most 18 digits (so it
// fits an int64) at the start of s, and returns it and what follows.
func quickInt(s string) (n int64, rest string, ok bool) {
	end := 0
	for end < len(s) && end < 19 && '0' <= s[end] && s[end] <= '9' {
		n = n*10 + int64(s[end]-'0')
		end++
	}
	if end == 0 || end > 18 || (s[0] == '0' && end > 1) {
		return 0, "", false
	}
	return n, s[end:], true
}
