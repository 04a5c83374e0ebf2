package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// chart geometry, in SVG user units.
const (
	chartW, chartH           = 760.0, 420.0
	padL, padR, padT, padB   = 70.0, 150.0, 30.0, 50.0
	plotW, plotH             = chartW - padL - padR, chartH - padT - padB
	gridLines                = 5
	chartTitle               = "store throughput (items/s of store time) vs live UTXOs; dashed: the warm-up"
	legendStep, legendOffset = 18.0, 10.0
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"}

// WriteChart draws each engine's throughput series as one polyline of a
// hand-written SVG line chart (x: live UTXOs, y: items per second, linear
// axes from zero). No dependency: the chart is a few paths and labels.
func WriteChart(w io.Writer, results []*EngineResult) error {
	var maxX, maxY float64
	for _, r := range results {
		for _, p := range append(r.Growth[:len(r.Growth):len(r.Growth)], r.Series...) {
			maxX, maxY = math.Max(maxX, float64(p.Live)), math.Max(maxY, p.PerSecond)
		}
	}
	maxX, maxY = niceCeil(maxX), niceCeil(maxY)
	x := func(v float64) float64 { return padL + plotW*v/maxX }
	y := func(v float64) float64 { return padT + plotH*(1-v/maxY) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14">%s</text>`+"\n", padL, chartTitle)
	for i := 0; i <= gridLines; i++ {
		fy, fx := maxY*float64(i)/gridLines, maxX*float64(i)/gridLines
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y(fy), padL+plotW, y(fy))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y(fy)+4, human(fy))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(fx), padT+plotH+18, human(fx))
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">live UTXOs</text>`+"\n", padL+plotW/2, chartH-10)
	for i, r := range results {
		color := palette[i%len(palette)]
		// The warm-up's growth dashed, the measured blocks solid.
		for _, line := range []struct {
			points []Point
			dash   string
		}{{r.Growth, ` stroke-dasharray="6 4"`}, {r.Series, ""}} {
			if len(line.points) == 0 {
				continue
			}
			pts := make([]string, len(line.points))
			for j, p := range line.points {
				pts[j] = fmt.Sprintf("%.1f,%.1f", x(float64(p.Live)), y(p.PerSecond))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, line.dash, strings.Join(pts, " "))
		}
		ly := padT + legendOffset + legendStep*float64(i)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", padL+plotW+12, ly, padL+plotW+32, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", padL+plotW+38, ly+4, html.EscapeString(r.Engine))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten, so grid labels are
// round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case v >= 1e3:
		return fmt.Sprintf("%gk", math.Round(v/1e2)/10)
	}
	return fmt.Sprintf("%g", math.Round(v*10)/10)
}
