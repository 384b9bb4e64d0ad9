package redistest

import (
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ACLEnv names the environment variable that runs tests as a least-privilege
// user. Set to 1, every server Start launches also has the user ACLUser with
// the rules given to UseACLRules; Client authenticates as that user, and
// Admin keeps the unrestricted default user for the test's own checks (INFO,
// CLIENT KILL, counters outside the lock keys).
const ACLEnv = "BATON_REDIS_ACL"

// ACLUser and ACLPassword are the credentials of the least-privilege user.
const (
	ACLUser     = "baton"
	ACLPassword = "baton-test-password"
)

// aclRules are the least-privilege user's rules; see UseACLRules.
var aclRules string

// UseACLRules sets the rules of the least-privilege user that servers get
// in ACL mode. redistest imports nothing from baton, so the package whose
// tests run in ACL mode passes its own rules (rlock.ACLRules) from its
// TestMain: there is one copy of them, the one users are told to grant.
func UseACLRules(rules string) { aclRules = rules }

// ACLMode reports whether ACLEnv asks for the least-privilege user.
func ACLMode() bool { return os.Getenv(ACLEnv) == "1" }

// userArgs returns the redis-server arguments that create user, enabled,
// with password and rules (space-separated ACL rules). Pass them to Start;
// a user defined on the command line survives Restart.
func userArgs(user, password, rules string) []string {
	// redis-server quotes each argument on its own, so every rule must be a
	// separate argument of the "user" directive.
	return append([]string{"--user", user, "on", ">" + password}, strings.Fields(rules)...)
}

func withACLUser(args []string) []string {
	if !ACLMode() {
		return args
	}
	if aclRules == "" {
		panic("redistest: " + ACLEnv + "=1 needs UseACLRules in the package's TestMain")
	}
	return append(userArgs(ACLUser, ACLPassword, aclRules), args...)
}

// Options returns go-redis options for addr that log in as the ACL test
// user in ACL mode, and as the default user otherwise: what every lock
// client of the tests uses, in this process or another.
func Options(addr string) *redis.Options {
	o := &redis.Options{Addr: addr}
	if ACLMode() {
		o.Username, o.Password = ACLUser, ACLPassword
	}
	return o
}

// Admin returns a go-redis client for the server as the unrestricted default
// user, closed at test end. It is Client outside ACL mode.
func (s *Server) Admin(opts ...func(*redis.Options)) *redis.Client {
	return s.client(&redis.Options{}, opts, s.atAddr)
}
