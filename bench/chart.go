package bench

import (
	_ "embed"
	"io"
	"math"
	"slices"
	"strconv"
	"text/template"
	"time"
)

//go:embed chart.svg.tmpl
var chartTemplate string

var chartSVG = template.Must(template.New("chart").Funcs(template.FuncMap{
	"f": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}).Parse(chartTemplate))

// Chart geometry, in SVG user units.
const (
	chartWidth   = 1200
	chartMargin  = 70.0 // left of the plots, room for the axis labels
	panelHeight  = 200.0
	panelSpacing = 110.0 // scenario names below a panel, the next one's title and bar labels above it
	titleAbove   = 40.0  // from a panel's title to its top, room for the labels of full bars
	legendTop    = 66.0
	legendStep   = 120.0 // between legend entries
	legendRow    = 18.0
)

// palette colours algorithms in table order; baton comes first.
var palette = []string{"#d62728", "#1f77b4", "#6baed6", "#2ca02c", "#98df8a", "#9467bd", "#ff7f0e", "#ffbb78", "#8c564b", "#7f7f7f"}

type chart struct {
	Width, Height int
	TitleX        float64
	Caveat        string
	Title         [2]string // what is compared; on what, when and which build
	Legend        []legendItem
	Panels        []panel
}

type legendItem struct {
	X, Y, TextX, TextY float64
	Fill, Name         string
}

type panel struct {
	Title, Metric               string
	Left, Right, Bottom, TitleY float64
	Grid                        []gridLine
	Bars                        []bar
	Groups                      []groupLabel
}

type gridLine struct {
	Y, LabelX, LabelY float64
	Label             string
}

type bar struct {
	X, Y, W, H, LabelX, LabelY float64
	Fill, Label, Tooltip       string
	Algorithm, Scenario        string
}

type groupLabel struct {
	X, Y float64
	Name string
}

// metric is one panel's figure; ok is false where a run could not measure
// it (no bar is drawn). Figures that differ by orders of magnitude use a log
// scale; fairness, a ratio from 0 to 1, a linear one.
type metric struct {
	name, title string
	value       func(Result) (v float64, ok bool)
	format      func(float64) string
	log         bool
}

var chartMetrics = []metric{
	{"acq_per_sec", "acquisitions/s (log scale, higher is better)",
		func(r Result) (float64, bool) { return r.AcqPerSec, true }, compact, true},
	{"wait_p99", "wait p99 (log scale, lower is better)",
		func(r Result) (float64, bool) { return float64(r.WaitP99), true },
		func(v float64) string { return short(time.Duration(v)) }, true},
	{"gap_per_ping", "hand-off gap p50 in PING round trips (log scale, lower is better; none without hand-offs)",
		func(r Result) (float64, bool) {
			if r.GapPerPing == nil {
				return 0, false
			}
			return *r.GapPerPing, true
		}, times, true},
	{"fairness", "fairness: least/most acquisitions of a worker (higher is better)",
		func(r Result) (float64, bool) { return r.Fairness, true },
		func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }, false},
}

// WriteSVG draws one panel per metric (acq/s, wait p99, hand-off gap in
// PINGs, fairness), each with a group of bars per scenario and a bar per
// algorithm, as a standalone SVG. Its title names the server, the date,
// GOMAXPROCS and the commit, and on miniredis says that the figures show
// behaviour, not speed.
func WriteSVG(w io.Writer, rep Report) error {
	var algos, scenarios []string
	for _, r := range rep.Results {
		if !slices.Contains(algos, r.Algorithm) {
			algos = append(algos, r.Algorithm)
		}
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
	}
	perRow := int(math.Floor((chartWidth - chartMargin) / legendStep))
	legendRows := max((len(algos)+perRow-1)/perRow, 1)
	top := legendTop + float64(legendRows)*legendRow + titleAbove + 20
	c := chart{
		Width:  chartWidth,
		Height: int(top + float64(len(chartMetrics))*(panelHeight+panelSpacing) - panelSpacing + 30),
		TitleX: chartMargin,
		Caveat: rep.Meta.Caveat,
		Title:  [2]string{"baton vs peer lock libraries and polling recipes, per scenario", rep.Meta.Headline()},
	}
	for i, a := range algos {
		x := chartMargin + float64(i%perRow)*legendStep
		y := legendTop + float64(i/perRow)*legendRow
		c.Legend = append(c.Legend, legendItem{X: x, Y: y, TextX: x + 16, TextY: y + 11, Fill: color(i), Name: a})
	}
	for i, m := range chartMetrics {
		c.Panels = append(c.Panels, layoutPanel(m, top+float64(i)*(panelHeight+panelSpacing), rep.Results, algos, scenarios))
	}
	return chartSVG.Execute(w, c)
}

func layoutPanel(m metric, top float64, results []Result, algos, scenarios []string) panel {
	p := panel{Title: m.title, Metric: m.name, Left: chartMargin, Right: chartWidth - 20, Bottom: top + panelHeight, TitleY: top - titleAbove}
	ticks, frac := scale(m, results)
	y := func(v float64) float64 { return p.Bottom - frac(v)*panelHeight }
	for _, t := range ticks {
		gy := y(t)
		p.Grid = append(p.Grid, gridLine{Y: gy, LabelX: p.Left - 6, LabelY: gy + 4, Label: m.format(t)})
	}
	groupW := (p.Right - p.Left) / float64(max(len(scenarios), 1))
	barW := groupW * 0.85 / float64(max(len(algos), 1))
	for si, s := range scenarios {
		left := p.Left + float64(si)*groupW + groupW*0.075
		p.Groups = append(p.Groups, groupLabel{X: left + groupW*0.425, Y: p.Bottom + 16, Name: s})
		for ai, a := range algos {
			i := slices.IndexFunc(results, func(r Result) bool { return r.Algorithm == a && r.Scenario == s })
			if i < 0 {
				continue
			}
			v, ok := m.value(results[i])
			if !ok {
				continue
			}
			x, by := left+float64(ai)*barW, y(v)
			p.Bars = append(p.Bars, bar{
				X: x, Y: by, W: barW * 0.85, H: p.Bottom - by, LabelX: x + barW*0.45 + 3, LabelY: by - 3,
				Fill: color(ai), Label: m.format(v), Tooltip: a + " on " + s + ": " + m.format(v),
				Algorithm: a, Scenario: s,
			})
		}
	}
	return p
}

// scale returns the grid values of m's axis and the map from a value to its
// height as a fraction of the panel.
func scale(m metric, results []Result) (ticks []float64, frac func(float64) float64) {
	var values []float64
	for _, r := range results {
		if v, ok := m.value(r); ok && (v > 0 || !m.log) {
			values = append(values, v)
		}
	}
	if m.log {
		lo, hi := decades(values)
		for d := lo; d <= hi; d++ {
			ticks = append(ticks, math.Pow(10, d))
		}
		return ticks, func(v float64) float64 {
			if v <= 0 {
				return 0
			}
			return min(max((math.Log10(v)-lo)/(hi-lo), 0), 1)
		}
	}
	top := 1.0
	if len(values) > 0 {
		top = max(slices.Max(values), 1)
	}
	for i := range 5 {
		ticks = append(ticks, top*float64(i)/4)
	}
	return ticks, func(v float64) float64 { return min(max(v/top, 0), 1) }
}

// decades returns the powers of ten below the smallest and just above the
// largest positive value, at least one decade apart. The lower one is a
// decade further down when the smallest value sits near it, so that its bar
// still shows.
func decades(values []float64) (lo, hi float64) {
	least, most := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if v > 0 {
			least, most = min(least, math.Log10(v)), max(most, math.Log10(v))
		}
	}
	if math.IsInf(least, 1) {
		return 0, 1
	}
	lo, hi = math.Floor(least), math.Ceil(most)
	if least-lo < 0.3 {
		lo--
	}
	return lo, max(hi, lo+1)
}

func color(i int) string { return palette[i%len(palette)] }

// times prints a ratio with three significant digits: 0.85×, 1.5×, 204×.
func times(v float64) string {
	if v < 1 {
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	}
	return threeDigits(v) + "×"
}

// compact prints a count with three significant digits: 950, 12.3k, 1.2M.
func compact(v float64) string {
	switch {
	case v < 1e3:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 1e6:
		return threeDigits(v/1e3) + "k"
	}
	return threeDigits(v/1e6) + "M"
}
