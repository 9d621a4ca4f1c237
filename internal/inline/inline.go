// Package inline evaluates the Groovy inline expressions of ShardingSphere
// rules that name data nodes and data sources: a comma-separated list of
// parts, each literal text with ranges and lists in ${...} or $->{...}
// (upstream's two spellings, which mean the same):
//
//	ds_${0..1}.t_order_$->{0..1}, ds_${['a', 'b']}.t_user
//
// It is the only place that expands them. The number of names an
// expression stands for is counted before any name is built, so that an
// expression of a few bytes cannot make a node build millions of names:
// see Count, Expand and the bounds MaxNames and MaxRuleNames.
package inline

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxNames is the most names one expression (every part of one
// actualDataNodes or actualDataSources value, or of one DATANODES or
// STORAGE_UNITS list) may stand for.
const MaxNames = 10_000

// MaxRuleNames is the most names the expressions of one statement, and
// those of one stored rule, may stand for together.
const MaxRuleNames = 100_000

var (
	// ErrSyntax is returned for an expression with a ${...} part that is
	// not a range of integers (${0..3}) or a list (${['a', 'b']}), or a
	// '$', '{' or '}' outside one.
	ErrSyntax = errors.New("not an inline expression of ranges and lists")
	// ErrTooMany is returned, wrapped, for an expression that stands for
	// more names than the limit it is expanded under.
	ErrTooMany = errors.New("too many names")
)

// segment is a literal piece of a part (values nil) or one ${...} piece
// (its values).
type segment struct {
	literal string
	values  []string
}

// Count returns the number of names expr stands for, without building
// them, or an error: ErrSyntax, or ErrTooMany (wrapped) as soon as the
// count passes limit or the names would hold more than MaxBytes. A part's
// count is the product of its ranges' and lists' lengths; the count of
// expr is the sum over its parts. Its cost is linear in len(expr) (a
// range's values are not built).
func Count(expr string, limit int) (int, error) {
	total, bytes := 0, 0
	for _, part := range Split(expr) {
		n, width, err := countPart(strings.TrimSpace(part), limit-total)
		if errors.Is(err, ErrTooMany) {
			return 0, tooMany(limit)
		}
		if err != nil {
			return 0, err
		}
		total += n
		if width > 0 && n > (MaxBytes-bytes)/width {
			return 0, fmt.Errorf("%w: its names hold more than %d bytes", ErrTooMany, MaxBytes)
		}
		bytes += n * width
	}
	return total, nil
}

// MaxBytes is the most bytes the names one expression stands for may hold
// together.
const MaxBytes = 4 << 20

// countPart is the number of names part stands for (ErrTooMany as soon
// as it passes limit) and the length of the longest.
func countPart(part string, limit int) (n, width int, err error) {
	n = 1
	err = scan(part, func(literal string) { width += len(literal) }, func(body string) error {
		k, w, err := countBody(body)
		if err != nil {
			return err
		}
		if n > limit/k {
			return tooMany(limit)
		}
		n, width = n*k, width+w
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if n > limit {
		return 0, 0, tooMany(limit)
	}
	return n, width, nil
}

func tooMany(limit int) error {
	return fmt.Errorf("%w: it stands for more than %d names", ErrTooMany, max(limit, 0))
}

// Expand returns every name expr stands for, in order: the parts in turn,
// each the combinations of its ranges and lists, the leftmost varying
// slowest (ds_${0..1}.t_${0..1} is ds_0.t_0, ds_0.t_1, ds_1.t_0,
// ds_1.t_1); parts are trimmed of white space. It counts first (Count)
// and builds nothing when the count passes limit (ErrTooMany, wrapped) or
// an expression cannot be read (ErrSyntax). Each range and list is
// evaluated once; the cost is linear in the length of what it returns.
func Expand(expr string, limit int) ([]string, error) {
	return ExpandContext(context.Background(), expr, limit)
}

// checkEvery is how many names ExpandContext builds between two looks at
// its context.
const checkEvery = 4096

// ExpandContext is Expand, stopped by ctx: it looks at ctx before the
// first name and every checkEvery names, and once ctx is done it returns
// no names and ctx's error (context.Canceled when a statement is killed
// or its client has gone).
func ExpandContext(ctx context.Context, expr string, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, err := Count(expr, limit)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for _, part := range Split(expr) {
		var segs []segment
		width := 0
		if err := scan(strings.TrimSpace(part), func(literal string) {
			segs = append(segs, segment{literal: literal})
			width += len(literal)
		}, func(body string) error {
			values, w, err := valuesOf(body)
			segs = append(segs, segment{values: values})
			width += w
			return err
		}); err != nil {
			return nil, err
		}
		if out, err = appendProduct(ctx, out, segs, width); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendProduct appends to out every combination of segs, the last
// segment varying fastest; width bounds a name's length. It stops with
// ctx's error once ctx is done (looked at every checkEvery names).
func appendProduct(ctx context.Context, out []string, segs []segment, width int) ([]string, error) {
	idx := make([]int, len(segs))
	var b strings.Builder
	for {
		if len(out)%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		b.Reset()
		b.Grow(width)
		for i, s := range segs {
			if s.values == nil {
				b.WriteString(s.literal)
			} else {
				b.WriteString(s.values[idx[i]])
			}
		}
		out = append(out, b.String())
		i := len(segs) - 1
		for ; i >= 0; i-- {
			if segs[i].values == nil {
				continue
			}
			if idx[i]++; idx[i] < len(segs[i].values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out, nil
		}
	}
}

// scan splits part into literal pieces and ${...} / $->{...} bodies, in
// order, calling literal and inline with each. A '$', '{' or '}' that
// does not belong to one is ErrSyntax, as is the first error inline
// returns.
func scan(part string, literal func(string), inline func(body string) error) error {
	for part != "" {
		start := strings.IndexAny(part, "${}")
		if start < 0 {
			literal(part)
			return nil
		}
		if start > 0 {
			literal(part[:start])
		}
		rest := part[start:]
		var open int
		switch {
		case strings.HasPrefix(rest, "${"):
			open = 2
		case strings.HasPrefix(rest, "$->{"):
			open = 4
		default:
			return ErrSyntax
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return ErrSyntax
		}
		body := rest[open : open+end]
		if strings.ContainsAny(body, "{$") {
			return ErrSyntax
		}
		if err := inline(body); err != nil {
			return err
		}
		part = rest[open+end+1:]
	}
	return nil
}

// countBody is the number of values a ${...} body stands for, a range
// a..b of integers (b not below a) or a list [x, 'y', "z"], and the
// length of the longest.
func countBody(body string) (n, width int, err error) {
	body = strings.TrimSpace(body)
	if lo, hi, ok := rangeOf(body); ok {
		return int(hi - lo + 1), max(len(strconv.FormatInt(lo, 10)), len(strconv.FormatInt(hi, 10))), nil
	}
	if items, ok := listOf(body); ok {
		for item := range strings.SplitSeq(items, ",") {
			n, width = n+1, max(width, len(strings.Trim(strings.TrimSpace(item), `'"`)))
		}
		return n, width, nil
	}
	return 0, 0, ErrSyntax
}

// valuesOf is the values a ${...} body stands for (see countBody) and the
// length of the longest.
func valuesOf(body string) ([]string, int, error) {
	body = strings.TrimSpace(body)
	if lo, hi, ok := rangeOf(body); ok {
		out := make([]string, 0, hi-lo+1)
		width := 0
		for i := lo; i <= hi; i++ {
			out = append(out, strconv.FormatInt(i, 10))
			width = max(width, len(out[len(out)-1]))
		}
		return out, width, nil
	}
	if items, ok := listOf(body); ok {
		var out []string
		width := 0
		for _, v := range strings.Split(items, ",") {
			out = append(out, strings.Trim(strings.TrimSpace(v), `'"`))
			width = max(width, len(out[len(out)-1]))
		}
		return out, width, nil
	}
	return nil, 0, ErrSyntax
}

// rangeOf reads a..b, two integers of at most 18 digits with b >= a.
func rangeOf(body string) (lo, hi int64, ok bool) {
	a, b, found := strings.Cut(body, "..")
	if !found {
		return 0, 0, false
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if len(a) > 19 || len(b) > 19 {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || hi < lo || hi-lo >= 1<<40 {
		return 0, 0, false
	}
	return lo, hi, true
}

// listOf is the items of [items].
func listOf(body string) (string, bool) {
	if len(body) < 2 || body[0] != '[' || body[len(body)-1] != ']' {
		return "", false
	}
	return body[1 : len(body)-1], true
}

// Pattern returns a regular expression that matches, whole, every name
// expr stands for, without building them: its literal pieces as they are,
// a list as its items, a range as any integer (so it may match names
// outside the range too). It is for questions that must not miss a name
// when expr stands for too many to expand, such as which storage units a
// rule may name. Its size and cost are linear in len(expr); the error is
// ErrSyntax as for Expand.
func Pattern(expr string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^(?:")
	for i, part := range Split(expr) {
		if i > 0 {
			b.WriteByte('|')
		}
		err := scan(strings.TrimSpace(part), func(literal string) { b.WriteString(regexp.QuoteMeta(literal)) }, func(body string) error {
			body = strings.TrimSpace(body)
			if _, _, ok := rangeOf(body); ok {
				b.WriteString("-?[0-9]+")
				return nil
			}
			items, ok := listOf(body)
			if !ok {
				return ErrSyntax
			}
			b.WriteString("(?:")
			for j, item := range strings.Split(items, ",") {
				if j > 0 {
					b.WriteByte('|')
				}
				b.WriteString(regexp.QuoteMeta(strings.Trim(strings.TrimSpace(item), `'"`)))
			}
			b.WriteByte(')')
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	b.WriteString(")$")
	return regexp.Compile(b.String())
}

// Split splits expr at the commas outside ${...} and $->{...}: its parts,
// untrimmed.
func Split(expr string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, expr[start:i])
				start = i + 1
			}
		}
	}
	return append(out, expr[start:])
}

// TopDot is the index of the first '.' of part outside ${...} and
// $->{...} (the end of a data node's data source), or -1.
func TopDot(part string) int {
	depth := 0
	for i := 0; i < len(part); i++ {
		switch part[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '.':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
