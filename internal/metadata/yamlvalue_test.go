package metadata

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestUnmarshalValueAsYAMLv3: the linear decoder gives what yaml.Unmarshal
// gives for the values rules hold, and refuses what it refuses.
func TestUnmarshalValueAsYAMLv3(t *testing.T) {
	for _, doc := range []string{
		"", "null", "~", "x", "'x'", "123", "-1.5", "true", "0x1f", "2001-12-14", "!!str 123", "!!binary aGk=",
		"type: MASK_FROM_X_TO_Y\nprops:\n  from-x: 3\n  to-y: '4'\n  replace-char: '*'\n  on: yes\n  empty:\n",
		"tables:\n  t:\n    actualDataNodes: ds_${0..1}.t_${0..1}\n    list: [a, 1, null, {b: c}]\n",
		"1: a\n2: b\n", "? [a]\n: x\n", "a: 1\na: 2\n", "{a: 1, a: 1}", "a: &x {b: 1}\nc: *x\n", "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
		"- a\n- - b\n  - c\n", "a: [1, 2", "\"\\u00e9\": multi\n  line\n", "a: |\n  text\n  more\n",
	} {
		var want any
		wantErr := yaml.Unmarshal([]byte(doc), &want)
		got, err := unmarshalValue([]byte(doc))
		if (err != nil) != (wantErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, %v; yaml.v3 %#v, %v", doc, got, err, want, wantErr)
		}
	}
}

// TestHostileAliasedMapping: a value with anchors is decoded by yaml.v3
// only when no mapping of it is bigger than maxAliasedMapping.
func TestHostileAliasedMapping(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: &x 1\nb: *x\n")
	for i := range maxAliasedMapping + 1 {
		fmt.Fprintf(&b, "k%d: v\n", i)
	}
	if _, err := unmarshalValue([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "anchors") {
		t.Errorf("a big mapping with an alias: %v", err)
	}
}

func propsValue(n int) []byte {
	var b strings.Builder
	b.WriteString("type: MD5\nprops:\n")
	for i := range n {
		fmt.Fprintf(&b, "  p-%d: v-%d\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkUnmarshalProps decodes an algorithm item of 5,000 and of
// 20,000 props (yaml.v3 alone: quadratic) and reports the time ratio:
// about 4 when linear, 16 when quadratic.
func BenchmarkUnmarshalProps(b *testing.B) {
	small, large := propsValue(5000), propsValue(20000)
	var ts, tl time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := unmarshalValue(small); err != nil {
			b.Fatal(err)
		}
		ts += time.Since(start)
		start = time.Now()
		if _, err := unmarshalValue(large); err != nil {
			b.Fatal(err)
		}
		tl += time.Since(start)
	}
	b.ReportMetric(float64(tl)/float64(ts), "ratio-4x")
}
