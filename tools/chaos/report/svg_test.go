package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/checker"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
	"github.com/shardkeeper/shardkeeper/tools/chaos/stats"
)

// busyReport is a checked minute of five nodes, one restarted, with three
// faults of every kind and one of a kind with XML in its name.
func busyReport() *checker.Report {
	const t0 = int64(1_700_000_000_000_000_000)
	at := func(sec float64) int64 { return t0 + int64(sec*1e9) }
	r := &checker.Report{
		Run: record.RunInfo{Seed: 7, Registry: "etcd", Versions: []string{"etcd 3.4.23", "go1.26.8"}, Nodes: 5, Pool: 3,
			SessionTTL: 2 * time.Second, Reservation: 3 * time.Second, Variant: record.VariantFenced, Start: t0, End: at(60)},
		Duration: time.Minute,
	}
	for n := 1; n <= 5; n++ {
		s := stats.NodeSeries{Node: "g" + string(rune('0'+n))}
		lives := [][2]int{{0, 60}}
		if n == 4 {
			lives = [][2]int{{0, 25}, {27, 60}}
		}
		for _, life := range lives {
			var seg []stats.RatePoint
			for sec := life[0] + 1; sec <= life[1]; sec++ {
				seg = append(seg, stats.RatePoint{Seconds: float64(sec), KeysPerSecond: float64(800 + 37*((sec*n)%11))})
			}
			s.Segments = append(s.Segments, seg)
		}
		r.Series = append(r.Series, s)
	}
	for i, kind := range record.FaultKinds {
		st := stats.FaultStats{Kind: kind}
		for j := range 3 {
			start := float64(5 + 15*j + i)
			f := record.FaultRecord{Kind: kind, Target: "g" + string(rune('1'+(i+j)%5)), Start: at(start), End: at(start + 0.5 + float64(j))}
			switch kind {
			case record.FaultKill, record.FaultClockStep:
				f.End = 0
			case record.FaultLeaderKill, record.FaultLeaderPause:
				f.Target = "e" + string(rune('1'+j))
			}
			r.FaultRecords = append(r.FaultRecords, f)
			st.Count++
		}
		r.Faults = append(r.Faults, st)
	}
	odd := record.FaultRecord{Kind: "odd <kind> & \"quotes\"", Target: "e2", Start: at(3), End: at(9), Detail: "a<b"}
	r.FaultRecords = append(r.FaultRecords, odd)
	r.Faults = append(r.Faults, stats.FaultStats{Kind: odd.Kind, Count: 1})
	return r
}

func TestPlotSVGIsXML(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, busyReport()); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var root string
	elems := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not XML: %v\n%s", err, buf.String())
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Space + " " + se.Name.Local
			}
			elems[se.Name.Local]++
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q", root)
	}
	if elems["polyline"] < 2 || elems["rect"] < 3 || elems["title"] < 3 {
		t.Errorf("elements %v: want node lines, fault bands and tooltips", elems)
	}
	if out := os.Getenv("CHAOS_PLOT_OUT"); out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
