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
	chartWidth   = 960
	chartMargin  = 70.0 // left of the plots, room for the axis labels
	panelHeight  = 220.0
	panelSpacing = 90.0 // scenario names below a panel, the next one's title above it
	chartTop     = 90.0
)

// palette colours algorithms in table order; baton comes first.
var palette = []string{"#d62728", "#1f77b4", "#6baed6", "#9467bd", "#2ca02c", "#ff7f0e"}

type chart struct {
	Width, Height int
	TitleX        float64
	Title         string
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

// metric is one panel's figure, drawn on a log scale because the
// algorithms differ by orders of magnitude.
type metric struct {
	name, title string
	value       func(Result) float64
	format      func(float64) string
}

var chartMetrics = []metric{
	{"wait_p99", "wait p99 (log scale, lower is better)",
		func(r Result) float64 { return float64(r.WaitP99) },
		func(v float64) string { return short(time.Duration(v)) }},
	{"acq_per_sec", "acquisitions/s (log scale, higher is better)",
		func(r Result) float64 { return r.AcqPerSec }, compact},
}

// WriteSVG draws wait p99 and throughput per scenario, one bar per
// algorithm, as a standalone SVG.
func WriteSVG(w io.Writer, results []Result) error {
	var algos, scenarios []string
	for _, r := range results {
		if !slices.Contains(algos, r.Algorithm) {
			algos = append(algos, r.Algorithm)
		}
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
	}
	c := chart{
		Width:  chartWidth,
		Height: int(chartTop + float64(len(chartMetrics))*(panelHeight+panelSpacing) - panelSpacing + 30),
		TitleX: chartMargin,
		Title:  "baton vs polling baselines, per scenario",
	}
	for i, a := range algos {
		x := chartMargin + float64(i)*140
		c.Legend = append(c.Legend, legendItem{X: x, Y: 36, TextX: x + 16, TextY: 47, Fill: color(i), Name: a})
	}
	for i, m := range chartMetrics {
		top := chartTop + float64(i)*(panelHeight+panelSpacing)
		c.Panels = append(c.Panels, layoutPanel(m, top, results, algos, scenarios))
	}
	return chartSVG.Execute(w, c)
}

func layoutPanel(m metric, top float64, results []Result, algos, scenarios []string) panel {
	p := panel{Title: m.title, Metric: m.name, Left: chartMargin, Right: chartWidth - 20, Bottom: top + panelHeight, TitleY: top - 10}
	lo, hi := decades(results, m.value)
	y := func(v float64) float64 {
		if v <= 0 {
			return p.Bottom
		}
		frac := min(max((math.Log10(v)-lo)/(hi-lo), 0), 1)
		return p.Bottom - frac*panelHeight
	}
	for d := lo; d <= hi; d++ {
		gy := y(math.Pow(10, d))
		p.Grid = append(p.Grid, gridLine{Y: gy, LabelX: p.Left - 6, LabelY: gy + 4, Label: m.format(math.Pow(10, d))})
	}
	groupW := (p.Right - p.Left) / float64(max(len(scenarios), 1))
	barW := groupW * 0.8 / float64(max(len(algos), 1))
	for si, s := range scenarios {
		left := p.Left + float64(si)*groupW + groupW*0.1
		p.Groups = append(p.Groups, groupLabel{X: left + groupW*0.4, Y: p.Bottom + 16, Name: s})
		for ai, a := range algos {
			i := slices.IndexFunc(results, func(r Result) bool { return r.Algorithm == a && r.Scenario == s })
			if i < 0 {
				continue
			}
			v := m.value(results[i])
			x, by := left+float64(ai)*barW, y(v)
			p.Bars = append(p.Bars, bar{
				X: x, Y: by, W: barW * 0.9, H: p.Bottom - by, LabelX: x + barW*0.45, LabelY: by - 3,
				Fill: color(ai), Label: m.format(v), Tooltip: a + " on " + s + ": " + m.format(v),
				Algorithm: a, Scenario: s,
			})
		}
	}
	return p
}

// decades returns the powers of ten just below the smallest and just above
// the largest positive value, at least one decade apart.
func decades(results []Result, value func(Result) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range results {
		if v := value(r); v > 0 {
			lo, hi = min(lo, math.Floor(math.Log10(v))), max(hi, math.Ceil(math.Log10(v)))
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	return lo, max(hi, lo+1)
}

func color(i int) string { return palette[i%len(palette)] }

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
