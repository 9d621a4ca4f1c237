package rule

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// What the init of an algorithm ShardingSphere ships requires of its
// props: an upstream node builds every rule it loads, and one whose
// algorithm's init refuses its props fails to build. The families hold
// their algorithms' checks (mask.Algorithms, encrypt.Algorithms).

// Algorithms is the algorithm types of one SPI (upper case), each with
// the checks of its props.
type Algorithms map[string]AlgorithmProps

// AlgorithmProps is what one algorithm type's init checks.
type AlgorithmProps struct {
	// Class is the simple name of the upstream class whose init checks the
	// props, which its refusals name.
	Class string
	// Props are checked in order; the first refusal is the one reported.
	Props []PropCheck
	// Then checks the props as a whole once each has passed; it returns
	// upstream's reason, "" when they are fine. Nil for none.
	Then func(props map[string]string) string
}

// PropCheck is one prop's check: Check returns upstream's reason for
// refusing value (ok is false when the prop is absent), "" to accept it.
type PropCheck struct {
	Key   string
	Check func(key, value string, ok bool) string
}

// Types returns f's algorithm types, sorted.
func (f Algorithms) Types() []string { return slices.Sorted(maps.Keys(f)) }

// Check returns upstream's AlgorithmInitializationException (10400, 44000)
// when the init of algorithm type typ would refuse props (a map of prop
// name to value; a value that is not a string counts as its text, a nil
// one as absent), nil when it accepts them or typ is not one of f's types
// (the type's own check refuses that).
func (f Algorithms) Check(typ string, props map[string]any) *sqlerr.Error {
	a, ok := f[strings.ToUpper(typ)]
	if !ok {
		return nil
	}
	text := map[string]string{}
	for k, v := range props {
		if v != nil {
			text[k] = fmt.Sprint(v)
		}
	}
	for _, p := range a.Props {
		v, ok := text[p.Key]
		if reason := p.Check(p.Key, v, ok); reason != "" {
			return AlgorithmInitialization(a.Class, reason)
		}
	}
	if a.Then != nil {
		if reason := a.Then(text); reason != "" {
			return AlgorithmInitialization(a.Class, reason)
		}
	}
	return nil
}

// AlgorithmInitialization is AlgorithmInitializationException (10400,
// 44000): the algorithm of class (upstream's class's simple name) cannot
// serve, for reason.
func AlgorithmInitialization(class, reason string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10400, SQLState: "44000", Message: fmt.Sprintf("Algorithm '%s' initialization failed, reason is: %s.", class, reason)}
}

// javaInt reads s as Java's Integer.parseInt does (an optional sign, then
// Decimal digits, in 32 bits).
func javaInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return n, err == nil
}

// The prop checks the families' Algorithms use (PropCheck.Check), with
// upstream's reasons.

// PositiveInteger is a required Java int above zero.
func PositiveInteger(key, v string, ok bool) string {
	switch n, isInt := javaInt(v); {
	case !ok:
		return key + " is required"
	case !isInt:
		return key + " must be a valid integer number"
	case n <= 0:
		return key + " must be a positive integer."
	}
	return ""
}

// SingleChar is one Java char: one UTF-16 unit.
func SingleChar(key, v string, ok bool) string {
	switch {
	case !ok:
		return key + " is required"
	case len(utf16.Encode([]rune(v))) != 1:
		return key + "'s length must be one"
	}
	return ""
}

// AtLeastOneChar is required text of at least one character.
func AtLeastOneChar(key, v string, ok bool) string {
	switch {
	case !ok:
		return key + " is required"
	case v == "":
		return key + "'s length must be at least one"
	}
	return ""
}

// NotNullOrEmpty is required, non-empty text.
func NotNullOrEmpty(key, v string, _ bool) string {
	if v == "" {
		return key + " can not be null or empty"
	}
	return ""
}

// NotEmptyWhenGiven is optional text, not empty when given.
func NotEmptyWhenGiven(key, v string, ok bool) string {
	if ok && v == "" {
		return key + " can not be empty"
	}
	return ""
}

// Decimal is an optional Java int.
func Decimal(key, v string, ok bool) string {
	if _, isInt := javaInt(v); ok && !isInt {
		return key + " can only be a decimal number"
	}
	return ""
}

// CharList is an optional comma-separated list whose trimmed items are
// each taken as their first character: an empty item has none (upstream's
// init fails on it, with this reason when the whole list is empty).
func CharList(key, v string, ok bool) string {
	if !ok {
		return ""
	}
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			return fmt.Sprintf("'%s' must be not empty", key)
		}
	}
	return ""
}

// IntegerList is an optional comma-separated list of Java ints; an empty
// list is the default's.
func IntegerList(_, v string, ok bool) string {
	if !ok || v == "" {
		return ""
	}
	for _, item := range strings.Split(v, ",") {
		if _, isInt := javaInt(strings.TrimSpace(item)); !isInt {
			return fmt.Sprintf("network-number %s can only be integer number", strings.TrimSpace(item))
		}
	}
	return ""
}

// RC4Key is a key of 5 to 255 bytes in UTF-8.
func RC4Key(_, v string, _ bool) string {
	if len(v) < 5 || len(v) > 255 {
		return "Key length has to be between 5 and 255"
	}
	return ""
}

// FromXNotAfterToY refuses from-x after to-y.
func FromXNotAfterToY(props map[string]string) string {
	x, _ := javaInt(props["from-x"])
	y, _ := javaInt(props["to-y"])
	if x > y {
		return "fromX must be less than or equal to toY"
	}
	return ""
}
