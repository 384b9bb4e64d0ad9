package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSVGIsValidXMLWithOneBarPerRunAndMetric(t *testing.T) {
	results := sampleResults()
	results[0].Algorithm = `<b&"x">` // names are escaped, not markup
	var buf bytes.Buffer
	require.NoError(t, WriteSVG(&buf, results))

	bars := map[string]map[string]bool{} // metric → "algorithm/scenario"
	dec := xml.NewDecoder(&buf)
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "valid XML")
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = el.Name.Local
		}
		a := attrs(el)
		if el.Name.Local != "rect" || a["class"] != "bar" {
			continue
		}
		if bars[a["data-metric"]] == nil {
			bars[a["data-metric"]] = map[string]bool{}
		}
		key := a["data-algorithm"] + "/" + a["data-scenario"]
		require.False(t, bars[a["data-metric"]][key], "one bar for %s", key)
		bars[a["data-metric"]][key] = true
		require.False(t, strings.HasPrefix(a["height"], "-"), "no negative heights")
	}
	require.Equal(t, "svg", root)
	require.Len(t, bars, len(chartMetrics))
	for metric, got := range bars {
		require.Len(t, got, len(results), metric)
		for _, r := range results {
			require.True(t, got[r.Algorithm+"/"+r.Scenario], "%s: %s on %s", metric, r.Algorithm, r.Scenario)
		}
	}
}

func attrs(el xml.StartElement) map[string]string {
	m := map[string]string{}
	for _, a := range el.Attr {
		m[a.Name.Local] = a.Value
	}
	return m
}

func TestDecadesSpanTheValues(t *testing.T) {
	results := []Result{{AcqPerSec: 850}, {AcqPerSec: 12000}, {AcqPerSec: 0}}
	lo, hi := decades(results, func(r Result) float64 { return r.AcqPerSec })
	require.Equal(t, [2]float64{2, 5}, [2]float64{lo, hi})
	lo, hi = decades(results[:1], func(r Result) float64 { return r.AcqPerSec })
	require.Equal(t, [2]float64{2, 3}, [2]float64{lo, hi})
	lo, hi = decades(nil, func(r Result) float64 { return r.AcqPerSec })
	require.Equal(t, [2]float64{0, 1}, [2]float64{lo, hi}, "no values still draws an axis")
}
