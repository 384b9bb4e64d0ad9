package reentrant

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Grant is a grant message, as a waiter's client receives it.
type Grant struct {
	Waiter string // the waiter it is addressed to
	Lock   string // the name of the lock or resource it grants
	// Kind is the kind of the shared resource it grants; empty for
	// a plain lock.
	Kind Kind
	// Mode is the granted hold's mode, of a shared resource; empty
	// for a plain lock.
	Mode Mode
	// Weight is how much of a shared resource's size the granted
	// hold takes (the permits, for a semaphore); zero for a plain lock.
	Weight int64
	Token  uint64 // the token of the hold it grants
	Owner  string // the owner the hold was granted to
	// Unconfirmed is the lease the hold has until its waiter confirms the
	// grant (a renewal, or a look), where liveness is judged by key; zero
	// when the grant already has the lease the waiter asked for.
	Unconfirmed time.Duration

	hold uint64 // a shared resource's hold ID (see HoldID); 0 for a plain lock
}

// HoldID is the ID of the hold the grant grants: a plain lock's token, or
// the hold ID of a shared resource's hold (see AcquireResult.HoldID).
func (g Grant) HoldID() uint64 { return holdID(g.hold, g.Token) }

// grantBody is one grant in a message: the token and a shared
// resource's hold ID (strings, which cjson does not round), the owner, the mode and the permits (of a shared
// resource; a mode of a read-write lock says its weight) and, where the
// grant's lease holds only until confirmed, that lease in ms.
type grantBody struct {
	Token       jsonText `json:"t"`
	Hold        jsonText `json:"h"`
	Owner       jsonText `json:"o"`
	Mode        Mode     `json:"m"`
	Permits     int64    `json:"n"`
	Unconfirmed int64    `json:"u"`
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
// hash key (k) and the grant's fields (see grantBody); a shared
// resource's has the resource's hash key (k) and, by waiter ID, the grants
// of every waiter the message was addressed to (g). notify hands a waiter
// the payload of a message addressed to several; the waiter reads it as
// addressed to itself (GrantReader does so without decoding it again for
// each waiter).
func ParseGrant(msg string) (Grant, error) {
	waiter, body, _ := strings.Cut(msg, " ")
	if g, ok := quickPlainGrant(waiter, body); ok {
		return g, nil
	}
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
	p, err := parseGrantBody(body)
	ids := strings.Split(addr, ",")
	if err != nil || addr == "" || p.plain != nil && len(ids) != 1 {
		return nil, fmt.Errorf("reentrant: not a grant message: %q", msg)
	}
	grants := make([]Grant, len(ids))
	for i, id := range ids {
		if grants[i], err = p.grant(id); err != nil {
			return nil, fmt.Errorf("reentrant: not a grant message: %q", msg)
		}
	}
	return grants, nil
}

// grantPayload is the object of a grant message, decoded: a plain lock's
// one grant, or a shared resource's grants by waiter ID.
type grantPayload struct {
	plain  *Grant           // the grant of a plain lock's message, its Waiter unset
	grants map[string]Grant // by waiter ID, of a shared resource's message
}

// errNotGrant is a payload that is not a grant message's.
var errNotGrant = errors.New("reentrant: not a grant message")

// parseGrantBody decodes the object of a grant message, and checks every
// grant it carries.
func parseGrantBody(body string) (grantPayload, error) {
	var m struct {
		grantBody
		Hash   jsonText             `json:"k"`
		Grants map[string]grantBody `json:"g"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return grantPayload{}, errNotGrant
	}
	// The name is the hash tag: the prefix cannot contain a brace. What
	// follows it names the kind: nothing for a plain lock.
	hash := string(m.Hash)
	from, to := strings.IndexByte(hash, '{'), strings.LastIndexByte(hash, '}')
	if from < 0 || to <= from {
		return grantPayload{}, errNotGrant
	}
	kind := Kind(strings.TrimPrefix(hash[to+1:], ":"))
	if (kind == "") != (m.Grants == nil) || kind != "" && kind != KindRW && kind != KindSemaphore {
		return grantPayload{}, errNotGrant
	}
	read := func(id string, b grantBody) (Grant, error) {
		token, err := strconv.ParseUint(string(b.Token), 10, 64)
		n := weight(b.Mode, b.Permits)
		if err != nil || (kind == "") != (b.Mode == "") || n < 0 {
			return Grant{}, errNotGrant
		}
		var hold uint64
		if kind != "" {
			if hold, err = strconv.ParseUint(string(b.Hold), 10, 64); err != nil || hold == 0 {
				return Grant{}, errNotGrant
			}
		}
		return Grant{Waiter: id, Lock: hash[from+1 : to], Kind: kind, Mode: b.Mode, Weight: n, Token: token,
			Owner: string(b.Owner), Unconfirmed: time.Duration(b.Unconfirmed) * time.Millisecond, hold: hold}, nil
	}
	if kind == "" {
		g, err := read("", m.grantBody)
		if err != nil {
			return grantPayload{}, err
		}
		return grantPayload{plain: &g}, nil
	}
	p := grantPayload{grants: make(map[string]Grant, len(m.Grants))}
	for id, b := range m.Grants {
		g, err := read(id, b)
		if err != nil {
			return grantPayload{}, err
		}
		p.grants[id] = g
	}
	return p, nil
}

// grant is the grant of waiter id the payload carries.
func (p grantPayload) grant(id string) (Grant, error) {
	if id == "" {
		return Grant{}, errNotGrant
	}
	if p.plain != nil {
		g := *p.plain
		g.Waiter = id
		return g, nil
	}
	g, ok := p.grants[id]
	if !ok {
		return Grant{}, errNotGrant
	}
	return g, nil
}

// GrantReader reads the grant messages one client's waiters receive. A
// message that grants several waiters of the client (a batch of reads)
// reaches each of them with the same payload; the reader decodes that
// payload once, for all of them, so that a batch of k costs the client k
// look-ups, not k decodes of k grants. It is safe for concurrent use; the
// zero value is ready.
type GrantReader struct {
	mu      sync.Mutex // guards the last payload decoded, and what it held
	payload string
	decoded grantPayload // zero for a payload that is no grant message's
}

// Grant is the grant to waiter id in payload, a grant message without its
// address, as ParseGrant reads the message addressed to id alone.
func (r *GrantReader) Grant(id, payload string) (Grant, error) {
	if g, ok := quickPlainGrant(id, payload); ok {
		return g, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The waiters of one message hold the same string, so this compares
	// its pointer first, and rarely its bytes.
	if payload != r.payload {
		r.payload = payload
		r.decoded, _ = parseGrantBody(payload) // zero, and so granting nobody, on an error
	}
	g, err := r.decoded.grant(id)
	if err != nil || strings.IndexByte(id, ',') >= 0 {
		return Grant{}, fmt.Errorf("reentrant: not a grant message to %q: %q", id, payload)
	}
	return g, nil
}

// quickPlainGrant reads a plain lock's grant message to one waiter on the
// waiter's path to Lock's return, where reflection over a cold cache costs
// more than the rest of the wake-up: the shape grant.lua writes is read by
// hand (see quickPlainBody). It reports false for anything else, which
// parseGrantBody then reads, and so defines the result.
func quickPlainGrant(waiter, body string) (Grant, bool) {
	m, ok := quickPlainBody(body)
	if !ok || waiter == "" || strings.IndexByte(waiter, ',') >= 0 {
		return Grant{}, false
	}
	token, err := strconv.ParseUint(string(m.Token), 10, 64)
	hash := string(m.Hash)
	from, to := strings.IndexByte(hash, '{'), strings.LastIndexByte(hash, '}')
	if err != nil || from < 0 || to <= from || to != len(hash)-1 {
		return Grant{}, false // a shared resource's key has a kind after its tag
	}
	return Grant{Waiter: waiter, Lock: hash[from+1 : to], Token: token, Owner: string(m.Owner),
		Unconfirmed: time.Duration(m.Unconfirmed) * time.Millisecond}, true
}

// plainBody is the JSON object of a plain lock's grant message, as
// grant.lua's cjson.encode writes it.
type plainBody struct {
	Token       jsonText `json:"t"`
	Owner       jsonText `json:"o"`
	Hash        jsonText `json:"k"`
	Unconfirmed int64    `json:"u"`
}

// quickPlainBody reads body if it is an object of distinct members t, o
// and k (strings, see quickString) and u (digits, fitting an int64), with
// no space anywhere. It reports false for anything else.
func quickPlainBody(body string) (m plainBody, ok bool) {
	rest, ok := strings.CutPrefix(body, "{")
	if !ok || rest == "}" {
		return m, ok
	}
	var seen uint8
	for {
		var name jsonText
		if name, rest, ok = quickString(rest); !ok {
			return m, false
		}
		i := strings.Index("toku", string(name))
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

// jsonText is a JSON string decoded byte for byte: a name or an owner may
// be any bytes, and cjson passes those that are not UTF-8 through as they
// are, where encoding/json would replace them (and the client could then
// tell neither which lock a grant is of nor whose it is).
type jsonText string

// UnmarshalJSON reads a JSON string as quickString does; null leaves t as
// it is, as for a string.
func (t *jsonText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, rest, ok := quickString(string(b))
	if !ok || rest != "" {
		return errNotGrant
	}
	*t = v
	return nil
}

// quickString reads a JSON string at the start of s, and returns it and
// what follows. Bytes that are not escaped are kept as they are, invalid
// UTF-8 included (see jsonText). It reports false for a control byte, an
// escape JSON does not have, a \u escape of a surrogate (cjson writes
// none), and a string that does not end. cjson escapes every '/', so a
// name with one is common.
func quickString(s string) (value jsonText, rest string, ok bool) {
	if s, ok = strings.CutPrefix(s, `"`); !ok {
		return "", "", false
	}
	var unescaped []byte // made at the first escape
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			if unescaped != nil {
				return jsonText(unescaped), s[i+1:], true
			}
			return jsonText(s[:i]), s[i+1:], true
		case c < 0x20:
			return "", "", false
		case c == '\\':
			if unescaped == nil {
				unescaped = append(make([]byte, 0, len(s)), s[:i]...)
			}
			var n int
			if unescaped, n = unescape(unescaped, s[i+1:]); n == 0 {
				return "", "", false
			}
			i += n
		case unescaped != nil:
			unescaped = append(unescaped, c)
		}
	}
	return "", "", false
}

// unescape appends to b what the escape at the start of s (after its
// backslash) stands for, and returns b and the escape's length: 0 for an
// escape JSON does not have, or a surrogate.
func unescape(b []byte, s string) ([]byte, int) {
	if s == "" {
		return b, 0
	}
	if e := strings.IndexByte(`"\/bfnrt`, s[0]); e >= 0 {
		return append(b, "\"\\/\b\f\n\r\t"[e]), 1
	}
	if s[0] != 'u' || len(s) < 5 {
		return b, 0
	}
	r, err := strconv.ParseUint(s[1:5], 16, 16)
	if err != nil || utf16.IsSurrogate(rune(r)) {
		return b, 0
	}
	return utf8.AppendRune(b, rune(r)), 5
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
