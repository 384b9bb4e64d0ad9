package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// HolderEnv, in the environment of a process of a program that calls
// ServeHolder first (baton-bench, and bench's own tests), makes that
// process the holder of the leak measure: the variable holds a holderSpec
// in JSON.
const HolderEnv = "BATON_BENCH_HOLDER"

// The leak measure (measureLeak).
const (
	// leakHeld is what the killed holder holds: the scenario's larger
	// request.
	leakHeld = 2
	// leakLease is the lease the holder's permits have, where they have
	// one (Env.Lease); leakGrace is added before the permits are counted.
	leakLease = 2 * time.Second
	leakGrace = 500 * time.Millisecond
	// leakProbe bounds each acquisition of the count.
	leakProbe = 300 * time.Millisecond
	// holderStart bounds the holder's start and acquisition; holderLife is
	// how long a holder nobody kills lives.
	holderStart = 10 * time.Second
	holderLife  = time.Minute
)

// holderReady is the line a holder prints once it holds its permits.
const holderReady = "holding"

// holderSpec is what a holder process takes, and where.
type holderSpec struct {
	Algorithm string        `json:"algorithm"`
	URL       string        `json:"url"`
	Prefix    string        `json:"prefix"`
	Name      string        `json:"name"`
	Permits   int64         `json:"permits"`
	Lease     time.Duration `json:"lease_ns"`
}

// ServeHolder returns at once unless HolderEnv is set. When it is, this
// process is a holder of the leak measure: it takes leakHeld permits as its
// spec says, prints holderReady on stdout, and waits to be killed, at most
// holderLife; ServeHolder then exits the process, with status 1 after an
// error.
func ServeHolder() {
	spec, ok := os.LookupEnv(HolderEnv)
	if !ok {
		return
	}
	if err := serveHolder(spec, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench holder:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveHolder(specJSON string, out io.Writer) error {
	var spec holderSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	algo, rdb, err := ForChild(SemaphoreAlgorithms(), spec.Algorithm, spec.URL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), holderLife)
	defer cancel()
	l, err := algo.NewSemaphore(Env{Client: rdb, Prefix: spec.Prefix, Permits: spec.Permits, Lease: spec.Lease})
	if err != nil {
		return err
	}
	defer l.Close()
	if _, err := l.Acquire(ctx, spec.Name, leakHeld); err != nil {
		return err
	}
	fmt.Fprintln(out, holderReady)
	<-ctx.Done()
	return nil
}

// ForChild is what a process of this program started for one algorithm
// needs: the algorithm called name among algos, and a client of its own to
// the server at url (redis:// or rediss://), which the caller closes.
func ForChild(algos []Algorithm, name, url string) (Algorithm, *redis.Client, error) {
	i := slices.IndexFunc(algos, func(a Algorithm) bool { return a.Name == name })
	if i < 0 {
		return Algorithm{}, nil, fmt.Errorf("unknown algorithm %q", name)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return Algorithm{}, nil, err
	}
	return algos[i], redis.NewClient(opts), nil
}

// measureLeak is how many permits a SIGKILLed holder leaves unavailable: a
// process of this program (HolderEnv) takes leakHeld permits of a fresh
// semaphore of algo, of sc.Permits permits, with a lease of leakLease where
// permits have one, and is SIGKILLed while holding them; once the lease and
// leakGrace have passed, this process takes the semaphore's permits one by
// one, each waiting leakProbe at most, and counts those it could not get.
func measureLeak(ctx context.Context, t Target, algo Algorithm, sc Scenario) (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	spec := holderSpec{Algorithm: algo.Name, URL: t.URL, Name: "leak", Permits: sc.Permits, Lease: leakLease,
		Prefix: fmt.Sprintf("bench:%s:%s:leak:%d:", algo.Name, sc.Name, time.Now().UnixNano())}
	if err := killHolder(ctx, exe, spec); err != nil {
		return 0, err
	}
	if err := sleep(ctx, leakLease+leakGrace); err != nil {
		return 0, err
	}
	rdb := t.NewClient()
	defer rdb.Close()
	l, err := algo.NewSemaphore(Env{Client: rdb, Prefix: spec.Prefix, Permits: sc.Permits})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	var got []Held
	defer func() {
		for _, h := range got {
			_ = h.Unlock(context.WithoutCancel(ctx))
		}
	}()
	for range sc.Permits {
		probe, cancel := context.WithTimeout(ctx, leakProbe)
		h, err := l.Acquire(probe, spec.Name, 1)
		expired := probe.Err() != nil
		cancel()
		if err != nil && ctx.Err() == nil && expired {
			break // none to be had
		}
		if err != nil {
			return 0, err
		}
		got = append(got, h)
	}
	return sc.Permits - int64(len(got)), nil
}

// killHolder starts a holder process of exe with spec, waits until it
// holds, and SIGKILLs it.
func killHolder(ctx context.Context, exe string, spec holderSpec) error {
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	start, cancel := context.WithTimeout(ctx, holderStart)
	defer cancel()
	cmd := exec.CommandContext(start, exe)
	cmd.Env = append(os.Environ(), HolderEnv+"="+string(specJSON))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, readErr := bufio.NewReader(stdout).ReadString('\n')
	killErr := cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if strings.TrimSpace(line) != holderReady {
		return fmt.Errorf("holder never held (%w): %s", errors.Join(readErr, start.Err()), strings.TrimSpace(stderr.String()))
	}
	return killErr
}
