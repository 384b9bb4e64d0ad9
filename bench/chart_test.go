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

func TestSVGIsValidXMLWithOneBarPerMeasuredFigure(t *testing.T) {
	rep := sampleReport()
	rep.Results[0].Algorithm = `<b&"x">` // names are escaped, not markup
	var buf bytes.Buffer
	require.NoError(t, WriteSVG(&buf, rep))
	svg := buf.String()

	bars := map[string]map[string]bool{} // metric → "algorithm/scenario"
	var texts []string
	dec := xml.NewDecoder(strings.NewReader(svg))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "valid XML")
		if cd, ok := tok.(xml.CharData); ok {
			texts = append(texts, string(cd))
		}
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
	for _, m := range chartMetrics {
		for _, r := range rep.Results {
			_, measured := m.value(r)
			require.Equal(t, measured, bars[m.name][r.Algorithm+"/"+r.Scenario], "%s: %s on %s", m.name, r.Algorithm, r.Scenario)
		}
	}
	require.Len(t, bars["gap_per_ping"], 1, "only one run had hand-offs")
	title := strings.Join(texts, " ")
	for _, want := range []string{"Redis 7.0.15", "2026-11-23", "GOMAXPROCS 2", "commit 0123456789ab+dirty"} {
		require.Contains(t, title, want)
	}
	require.NotContains(t, title, MiniredisCaveat)
}

func TestSVGTitleSaysMiniredisFiguresAreNotSpeed(t *testing.T) {
	rep := sampleReport()
	rep.Meta.Caveat = MiniredisCaveat
	var buf bytes.Buffer
	require.NoError(t, WriteSVG(&buf, rep))
	require.Contains(t, buf.String(), MiniredisCaveat)
}

func attrs(el xml.StartElement) map[string]string {
	m := map[string]string{}
	for _, a := range el.Attr {
		m[a.Name.Local] = a.Value
	}
	return m
}

func TestDecadesSpanTheValues(t *testing.T) {
	lo, hi := decades([]float64{850, 12000, 0})
	require.Equal(t, [2]float64{2, 5}, [2]float64{lo, hi})
	lo, hi = decades([]float64{850})
	require.Equal(t, [2]float64{2, 3}, [2]float64{lo, hi})
	lo, hi = decades([]float64{1.05, 354})
	require.Equal(t, [2]float64{-1, 3}, [2]float64{lo, hi}, "a bar at 1.05 is not drawn flat on a 1 baseline")
	lo, hi = decades(nil)
	require.Equal(t, [2]float64{0, 1}, [2]float64{lo, hi}, "no values still draws an axis")
}
