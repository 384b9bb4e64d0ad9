package bench

import (
	"context"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MiniredisCaveat is what every output of a run on the embedded server says.
const MiniredisCaveat = "miniredis: these figures show behaviour, not speed"

// Report is one run of a Suite: what it ran on, and its results.
type Report struct {
	Meta    Meta     `json:"meta"`
	Results []Result `json:"results"`
	// Scripts is the server time of each algorithm's acquire and release
	// calls, measured apart after the rounds; none on miniredis.
	Scripts []ScriptCost `json:"script_costs,omitempty"`
}

// Meta says what a run ran on and how, so that its figures can be
// reproduced and compared.
type Meta struct {
	// Server names the server: "Redis 7.0.15 (redis-server on
	// 127.0.0.1:6379)", or "miniredis".
	Server string `json:"server"`
	// RedisVersion is INFO's redis_version, empty when INFO has none.
	RedisVersion string `json:"redis_version,omitempty"`
	// Caveat is MiniredisCaveat on the embedded server, else empty.
	Caveat string `json:"caveat,omitempty"`
	// RTT is the delay proxy's delay each way (Target.RTT), 0 without
	// one; in JSON as nanoseconds.
	RTT time.Duration `json:"rtt_ns,omitempty"`
	// GoVersion is the toolchain that built the bench.
	GoVersion string `json:"go_version"`
	// Module and ModuleVersion are the bench's main module as the build
	// info records it; Commit is its VCS revision ("+dirty" when the tree
	// had changes), empty when the build recorded none.
	Module        string `json:"module"`
	ModuleVersion string `json:"module_version"`
	Commit        string `json:"commit,omitempty"`
	// Peers maps each peer library's module to the version linked in.
	Peers      map[string]string `json:"peers"`
	Date       time.Time         `json:"date"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	NumCPU     int               `json:"num_cpu"`
	Rounds     int               `json:"rounds"`
	Algorithms []string          `json:"algorithms"`
	Scenarios  []Scenario        `json:"scenarios"`
}

func newMeta(ctx context.Context, admin redis.UniversalClient, t Target, scenarios []Scenario, algos []Algorithm, rounds int) Meta {
	m := Meta{
		Server:     t.Name,
		RTT:        t.RTT,
		GoVersion:  runtime.Version(),
		Peers:      map[string]string{},
		Date:       time.Now().UTC().Truncate(time.Second),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		Rounds:     rounds,
		Scenarios:  scenarios,
	}
	for _, a := range algos {
		m.Algorithms = append(m.Algorithms, a.Name)
	}
	if t.Miniredis {
		m.Caveat = MiniredisCaveat
	} else if info, err := admin.Info(ctx, "server").Result(); err == nil {
		m.RedisVersion = infoField(info, "redis_version")
		if m.RedisVersion != "" {
			m.Server = "Redis " + m.RedisVersion + " (" + t.Name + ")"
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		m.setBuild(bi)
	}
	return m
}

// setBuild records the main module, its VCS revision ("+dirty" when the
// working tree had changes) and the peers' versions from the build info.
// A test binary records no dependencies.
func (m *Meta) setBuild(bi *debug.BuildInfo) {
	m.Module, m.ModuleVersion = bi.Main.Path, bi.Main.Version
	for _, d := range bi.Deps {
		if slices.Contains(PeerModules, d.Path) {
			m.Peers[d.Path] = d.Version
		}
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+dirty"
	}
	m.Commit = rev
}

// infoField returns the value of key in the text of an INFO reply.
func infoField(info, key string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}

// Headline names the server (and the delay proxy, if any), the date,
// GOMAXPROCS and the commit in one line, for the chart; the caveat, if
// any, is for the caller to show beside it.
func (m Meta) Headline() string { return m.serverLine() + ", " + m.buildLine() }

// headlines is Headline on two lines, for text within 100 columns.
func (m Meta) headlines() string { return m.serverLine() + "\n" + m.buildLine() }

func (m Meta) serverLine() string {
	if m.RTT > 0 {
		return m.Server + ", through a delay proxy of " + short(m.RTT) + " each way"
	}
	return m.Server
}

func (m Meta) buildLine() string {
	return strings.Join([]string{m.Date.Format(time.DateOnly), "GOMAXPROCS " + strconv.Itoa(m.GOMAXPROCS),
		"commit " + orUnknown(shortCommit(m.Commit))}, ", ")
}

func shortCommit(c string) string {
	rev, dirty, _ := strings.Cut(c, "+")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty != "" {
		rev += "+" + dirty
	}
	return rev
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
