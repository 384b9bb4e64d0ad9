package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// PairRun is one library's uncontended loop: Pairs Lock+Unlock pairs of one
// name, one after the other, on one client.
type PairRun struct {
	Algorithm string `json:"algorithm"`
	Pairs     int    `json:"pairs"`
	// Wall is the loop's run time, CPU the user+system CPU time the
	// process used meanwhile.
	Wall time.Duration `json:"wall_ns"`
	CPU  time.Duration `json:"cpu_ns"`
}

// WallPerPair is the wall time of one Lock+Unlock.
func (p PairRun) WallPerPair() time.Duration { return p.Wall / time.Duration(max(p.Pairs, 1)) }

// CPUPerPair is the process CPU time of one Lock+Unlock.
func (p PairRun) CPUPerPair() time.Duration { return p.CPU / time.Duration(max(p.Pairs, 1)) }

// RunPairs runs algo's uncontended loop of pairs Lock+Unlock pairs on rdb,
// after one untimed pair that dials and loads scripts. Its CPU figure is the
// whole process's: run it in a process of its own.
func RunPairs(ctx context.Context, algo Algorithm, rdb redis.UniversalClient, prefix string, pairs int) (PairRun, error) {
	if pairs < 1 {
		return PairRun{}, errors.New("bench: pairs must be at least 1")
	}
	l, err := algo.New(Env{Client: rdb, Prefix: prefix})
	if err != nil {
		return PairRun{}, err
	}
	defer l.Close()
	if err := lockUnlock(ctx, l, "pair"); err != nil {
		return PairRun{}, err
	}
	cpuBefore, err := processCPU()
	if err != nil {
		return PairRun{}, err
	}
	start := time.Now()
	for range pairs {
		if err := lockUnlock(ctx, l, "pair"); err != nil {
			return PairRun{}, err
		}
	}
	wall := time.Since(start)
	cpuAfter, err := processCPU()
	if err != nil {
		return PairRun{}, err
	}
	return PairRun{Algorithm: algo.Name, Pairs: pairs, Wall: wall, CPU: cpuAfter - cpuBefore}, nil
}

// lockUnlock takes name with l and gives it back.
func lockUnlock(ctx context.Context, l Locker, name string) error {
	h, err := l.Lock(ctx, name)
	if err != nil {
		return err
	}
	return h.Unlock(ctx)
}

// AB compares the uncontended loop of baton and other libraries whole
// process against whole process: no library runs in a process another has
// warmed, loaded or left garbage in.
type AB struct {
	// Target is the server the processes run on, for the report's Meta.
	Target Target
	// Algorithms are the libraries compared; baton must be one of them.
	Algorithms []Algorithm
	// Rounds is how many times every library runs; 0 is 1. Round r runs
	// them in their order rotated by r, which for two alternates them.
	Rounds int
	// Pairs is each run's number of Lock+Unlock pairs.
	Pairs int
	// RunChild runs RunPairs for the algorithm named in a fresh process
	// on Target, and returns its figures.
	RunChild func(ctx context.Context, algorithm string) (PairRun, error)
	// Progress, when set, gets a line as each run ends.
	Progress io.Writer
}

// ABReport is what an AB found: each round's runs, in the order they ran.
type ABReport struct {
	Meta   Meta        `json:"meta"`
	Pairs  int         `json:"pairs"`
	Rounds [][]PairRun `json:"rounds"`
}

// CheckAB says why algos cannot make an A/B, which compares baton with
// the others, so that a command can refuse them before it starts anything.
func CheckAB(algos []Algorithm) error {
	if !slices.ContainsFunc(algos, func(a Algorithm) bool { return a.Name == BatonName }) {
		return errors.New("bench: an A/B compares baton: name it among the algorithms")
	}
	return nil
}

// Run runs every library once per round, each in a fresh process.
func (ab AB) Run(ctx context.Context) (ABReport, error) {
	if err := CheckAB(ab.Algorithms); err != nil {
		return ABReport{}, err
	}
	rounds := max(ab.Rounds, 1)
	admin := ab.Target.NewClient()
	defer admin.Close()
	rep := ABReport{Meta: newMeta(ctx, admin, ab.Target, nil, ab.Algorithms, rounds), Pairs: ab.Pairs}
	total := rounds * len(ab.Algorithms)
	for round := range rounds {
		var runs []PairRun
		for _, algo := range rotate(ab.Algorithms, round) {
			run, err := ab.RunChild(ctx, algo.Name)
			if err != nil {
				return rep, fmt.Errorf("bench: %s in round %d: %w", algo.Name, round+1, err)
			}
			runs = append(runs, run)
			if ab.Progress != nil {
				fmt.Fprintf(ab.Progress, "[%*d/%d] round %d/%d  %-14s  wall %7s  CPU %7s per pair\n",
					len(strconv.Itoa(total)), round*len(ab.Algorithms)+len(runs), total, round+1, rounds,
					run.Algorithm, short(run.WallPerPair()), short(run.CPUPerPair()))
			}
		}
		rep.Rounds = append(rep.Rounds, runs)
	}
	return rep, nil
}

// abRatios is baton's figures over another library's in one round.
type abRatios struct{ wall, cpu float64 }

// roundRatio is baton's wall and CPU per pair over algorithm's in one
// round; false for baton itself, or when either did not run.
func roundRatio(round []PairRun, algorithm string) (abRatios, bool) {
	b, ok1 := findRun(round, BatonName)
	o, ok2 := findRun(round, algorithm)
	if algorithm == BatonName || !ok1 || !ok2 || o.WallPerPair() <= 0 || o.CPUPerPair() <= 0 {
		return abRatios{}, false
	}
	return abRatios{
		wall: float64(b.WallPerPair()) / float64(o.WallPerPair()),
		cpu:  float64(b.CPUPerPair()) / float64(o.CPUPerPair()),
	}, true
}

// medianRatio is the median over the rounds of baton's wall and CPU per
// pair over algorithm's; false when no round has both.
func (rep ABReport) medianRatio(algorithm string) (abRatios, bool) {
	var walls, cpus []float64
	for _, round := range rep.Rounds {
		if r, ok := roundRatio(round, algorithm); ok {
			walls, cpus = append(walls, r.wall), append(cpus, r.cpu)
		}
	}
	if len(walls) == 0 {
		return abRatios{}, false
	}
	return abRatios{median(walls), median(cpus)}, true
}

func findRun(round []PairRun, algorithm string) (PairRun, bool) {
	i := slices.IndexFunc(round, func(r PairRun) bool { return r.Algorithm == algorithm })
	if i < 0 {
		return PairRun{}, false
	}
	return round[i], true
}

// WriteAB prints an A/B: a row per run, in the order of the runs, with
// baton's figures over that library's of the same round, then per library
// the medians over the rounds of its figures and of those ratios.
func WriteAB(w io.Writer, rep ABReport) error {
	if rep.Meta.Caveat != "" {
		fmt.Fprintln(w, rep.Meta.Caveat)
	}
	fmt.Fprintf(w, "%s\nA/B: %d uncontended Lock+Unlock pairs per library per round, each run in a fresh process, %d round(s)\n\n",
		rep.Meta.headlines(), rep.Pairs, len(rep.Rounds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\talgorithm\twall/pair\tCPU/pair\tbaton÷it wall\tbaton÷it CPU\t")
	for i, round := range rep.Rounds {
		for _, run := range round {
			ratio, ok := roundRatio(round, run.Algorithm)
			abRow(tw, strconv.Itoa(i+1), run.Algorithm, run.WallPerPair(), run.CPUPerPair(), ratio, ok)
		}
	}
	for _, algo := range rep.Meta.Algorithms {
		var walls, cpus []time.Duration
		for _, round := range rep.Rounds {
			if run, ok := findRun(round, algo); ok {
				walls, cpus = append(walls, run.WallPerPair()), append(cpus, run.CPUPerPair())
			}
		}
		ratio, ok := rep.medianRatio(algo)
		abRow(tw, "median", algo, median(walls), median(cpus), ratio, ok)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, abLegend)
	return err
}

const abLegend = `
wall/pair: the loop's run time per Lock+Unlock; CPU/pair: the process's user+system CPU time over the loop.
baton÷it: baton's figure over the library's, in the same round; median rows: over the rounds, ratios included.
`

func abRow(w io.Writer, round, algo string, wall, cpu time.Duration, ratio abRatios, withRatio bool) {
	cells := []string{round, algo, short(wall), short(cpu), "", ""}
	if withRatio {
		cells[4], cells[5] = timesCell(ratio.wall), timesCell(ratio.cpu)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t")+"\t")
}
