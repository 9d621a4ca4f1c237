package report

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/checker"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
	"github.com/shardkeeper/shardkeeper/tools/chaos/stats"
)

// Plot layout, in SVG user units (pixels).
const (
	plotWidth  = 1200
	plotLeft   = 130 // y axis and fault lane labels
	plotRight  = 20  // right margin
	plotTop    = 56  // top of the keys/s area
	plotHeight = 340 // height of the keys/s area
	plotLane   = 14  // height of one fault lane
)

// plotNodeColors colors the nodes' lines (Tableau 10).
var plotNodeColors = []string{
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// plotFaultColors colors the fault kinds; kinds not listed are grey.
var plotFaultColors = map[string]string{
	record.FaultPartition:   "#d62728",
	record.FaultOneWay:      "#ff7f0e",
	record.FaultPause:       "#9467bd",
	record.FaultKill:        "#000000",
	record.FaultLeaderKill:  "#8c564b",
	record.FaultLeaderPause: "#e377c2",
	record.FaultClockStep:   "#17becf",
	record.FaultClockSkew:   "#1f77b4",
	record.FaultFenceDelete: "#bcbd22",
}

// WriteSVG writes a standalone SVG image, 1200 units wide: keys/s per node
// over seconds since RunInfo.Start (one polyline per incarnation, so a dead
// node leaves a gap), and below it one lane per fault target with each
// fault as a translucent band from its start to its end (a tick when
// instantaneous) colored by kind, with legends for nodes and fault kinds.
// Each fault carries a <title> tooltip. It returns the first write error.
func WriteSVG(w io.Writer, r *checker.Report) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	// Scales.
	xmax := r.Duration.Seconds()
	ymax := 0.0
	for _, s := range r.Series {
		for _, seg := range s.Segments {
			for _, pt := range seg {
				xmax = max(xmax, pt.Seconds)
				ymax = max(ymax, pt.KeysPerSecond)
			}
		}
	}
	for _, f := range r.FaultRecords {
		xmax = max(xmax, float64(max(f.Start, f.End)-r.Run.Start)/1e9)
	}
	if !(xmax > 0) || math.IsInf(xmax, 0) {
		xmax = 1
	}
	if !(ymax > 0) || math.IsInf(ymax, 0) {
		ymax = 1
	}
	xstep := plotStep(xmax, 12)
	ystep := plotStep(ymax*1.05, 6)
	ymax = math.Ceil(ymax*1.05/ystep) * ystep
	innerW := float64(plotWidth - plotLeft - plotRight)
	x := func(sec float64) float64 { return plotLeft + min(max(sec, 0), xmax)/xmax*innerW }
	y := func(v float64) float64 { return plotTop + plotHeight - min(max(v, 0), ymax)/ymax*plotHeight }

	// Fault lanes: the nodes first, then other targets by name.
	var targets []string
	for _, n := range r.Nodes {
		targets = append(targets, n.Node)
	}
	var others []string
	for _, f := range r.FaultRecords {
		if !slices.Contains(targets, f.Target) && !slices.Contains(others, f.Target) {
			others = append(others, f.Target)
		}
	}
	slices.Sort(others)
	targets = append(targets, others...)
	lanesTop := float64(plotTop + plotHeight + 62)
	lanesBottom := lanesTop + float64(len(targets)*plotLane)
	kinds := make([]string, 0, len(r.Faults))
	counts := map[string]int{}
	for _, f := range r.Faults {
		kinds = append(kinds, f.Kind)
		counts[f.Kind] = f.Count
	}
	legendTop := lanesBottom + 26
	legendRows := (len(kinds) + 4) / 5
	height := int(legendTop) + legendRows*18 + 10

	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		plotWidth, height, plotWidth, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", plotLeft,
		plotEsc(fmt.Sprintf("keys/s per node: %s, seed %d, %d nodes, pool %d, TTL %s, W %s, %s",
			r.Run.Registry, r.Run.Seed, r.Run.Nodes, r.Run.Pool, r.Run.SessionTTL, r.Run.Reservation, r.Run.Variant.Label())))

	// Node legend.
	lx := float64(plotLeft)
	for i, n := range r.Nodes {
		c := plotNodeColors[i%len(plotNodeColors)]
		p(`<line x1="%.1f" y1="36" x2="%.1f" y2="36" stroke="%s" stroke-width="2.5"/>`+"\n", lx, lx+18, c)
		p(`<text x="%.1f" y="40">%s</text>`+"\n", lx+22, plotEsc(n.Node))
		lx += 22 + 7*float64(len(n.Node)) + 18
	}

	// Grid, axes and tick labels.
	p(`<g stroke="#e5e5e5" stroke-width="1">` + "\n")
	for v := 0.0; v <= xmax+1e-9; v += xstep {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>`+"\n", x(v), plotTop, x(v), lanesBottom)
	}
	for v := ystep; v <= ymax+1e-9; v += ystep {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotLeft, y(v), plotWidth-plotRight, y(v))
	}
	p("</g>\n")
	p(`<g stroke="black" stroke-width="1">`+"\n"+`<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n"+`<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n</g>\n",
		plotLeft, plotTop, plotLeft, plotTop+plotHeight, plotLeft, plotTop+plotHeight, plotWidth-plotRight, plotTop+plotHeight)
	p(`<g text-anchor="middle">` + "\n")
	for v := 0.0; v <= xmax+1e-9; v += xstep {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/><text x="%.1f" y="%d">%s</text>`+"\n",
			x(v), plotTop+plotHeight, x(v), plotTop+plotHeight+4, x(v), plotTop+plotHeight+16, plotNum(v))
	}
	p(`<text x="%.1f" y="%d">seconds since start</text>`+"\n", plotLeft+innerW/2, plotTop+plotHeight+32)
	p("</g>\n")
	p(`<g text-anchor="end">` + "\n")
	for v := 0.0; v <= ymax+1e-9; v += ystep {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/><text x="%d" y="%.1f">%s</text>`+"\n",
			plotLeft-4, y(v), plotLeft, y(v), plotLeft-6, y(v)+4, plotNum(v))
	}
	p("</g>\n")
	p(`<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">keys/s</text>`+"\n", plotTop+plotHeight/2)

	// Node lines.
	for i, s := range r.Series {
		c := plotNodeColors[i%len(plotNodeColors)]
		p(`<g stroke="%s" fill="none" stroke-width="1.5"><title>%s</title>`+"\n", c, plotEsc(s.Node))
		for _, seg := range plotSplitGaps(s.Segments) {
			if len(seg) == 1 {
				p(`<circle cx="%.1f" cy="%.1f" r="1.5" fill="%s"/>`+"\n", x(seg[0].Seconds), y(seg[0].KeysPerSecond), c)
				continue
			}
			var b strings.Builder
			for j, pt := range seg {
				if j > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%.1f,%.1f", x(pt.Seconds), y(pt.KeysPerSecond))
			}
			p(`<polyline points="%s"/>`+"\n", b.String())
		}
		p("</g>\n")
	}

	// Fault lanes.
	p(`<text x="%d" y="%.1f" font-weight="bold">faults by target</text>`+"\n", plotLeft, lanesTop-8)
	for i, t := range targets {
		ly := lanesTop + float64(i*plotLane)
		if i%2 == 0 {
			p(`<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="#f4f4f4"/>`+"\n", plotLeft, ly, innerW, plotLane)
		}
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, ly+plotLane-3, plotEsc(t))
	}
	for _, f := range r.FaultRecords {
		i := slices.Index(targets, f.Target)
		ly := lanesTop + float64(i*plotLane) + 1
		x0 := x(float64(f.Start-r.Run.Start) / 1e9)
		wd := 2.0
		if f.End > f.Start {
			wd = max(x(float64(f.End-r.Run.Start)/1e9)-x0, 2)
		}
		d := "instant"
		if f.End > f.Start {
			d = fmtDur(time.Duration(f.End - f.Start))
		}
		title := fmt.Sprintf("%s %s at %.1fs, %s", f.Kind, f.Target, float64(f.Start-r.Run.Start)/1e9, d)
		if f.Detail != "" {
			title += ": " + f.Detail
		}
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.55"><title>%s</title></rect>`+"\n",
			x0, ly, wd, plotLane-2, plotFaultColor(f.Kind), plotEsc(title))
	}

	// Fault kind legend.
	for i, k := range kinds {
		lx := float64(plotLeft) + float64(i%5)*210
		ly := legendTop + float64(i/5)*18
		p(`<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s" fill-opacity="0.55"/>`+"\n", lx, ly-9, plotFaultColor(k))
		p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+19, ly, plotEsc(fmt.Sprintf("%s (%d)", k, counts[k])))
	}
	p("</svg>\n")
	return bw.Flush()
}

func plotFaultColor(kind string) string {
	if c, ok := plotFaultColors[kind]; ok {
		return c
	}
	return "#7f7f7f"
}

// plotStep returns a step of 1, 2 or 5 times a power of ten that cuts
// [0, span] into at most about n intervals.
func plotStep(span float64, n int) float64 {
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// plotNum formats a tick value: 12, 2.5, 1.5k, 2M.
func plotNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmtFloat(math.Round(v/1e5)/10) + "M"
	case a >= 1e4:
		return fmtFloat(math.Round(v/1e2)/10) + "k"
	default:
		return fmtFloat(math.Round(v*100) / 100)
	}
}

// plotEsc escapes s for XML text and attribute values.
func plotEsc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// plotSplitGaps breaks segments where no progress was recorded for over a
// second (a paused process writes none), so a line never bridges a pause.
func plotSplitGaps(segments [][]stats.RatePoint) [][]stats.RatePoint {
	var out [][]stats.RatePoint
	for _, seg := range segments {
		start := 0
		for j := 1; j < len(seg); j++ {
			if seg[j].Seconds-seg[j-1].Seconds > 1 {
				out = append(out, seg[start:j])
				start = j
			}
		}
		if start < len(seg) {
			out = append(out, seg[start:])
		}
	}
	return out
}
