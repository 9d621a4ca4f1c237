package dbconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// What the init of each mask and encrypt algorithm ShardingSphere ships
// requires of its props: an upstream node builds every rule it loads, and
// one whose algorithm's init refuses its props fails to build. Read-only.

// AlgorithmFamily is the algorithm types of one SPI (upper case), each with
// the checks of its props.
type AlgorithmFamily map[string]AlgorithmProps

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

// MaskAlgorithms are the mask algorithm types, as upstream's mask
// algorithms and their MaskAlgorithmPropertiesChecker check them.
var MaskAlgorithms = AlgorithmFamily{
	"MD5":                       {Class: "MD5MaskAlgorithm"}, // salt is optional
	"KEEP_FIRST_N_LAST_M":       {Class: "KeepFirstNLastMMaskAlgorithm", Props: firstNLastM},
	"KEEP_FROM_X_TO_Y":          {Class: "KeepFromXToYMaskAlgorithm", Props: fromXToY, Then: fromXNotAfterToY},
	"MASK_FIRST_N_LAST_M":       {Class: "MaskFirstNLastMMaskAlgorithm", Props: firstNLastM},
	"MASK_FROM_X_TO_Y":          {Class: "MaskFromXToYMaskAlgorithm", Props: fromXToY, Then: fromXNotAfterToY},
	"MASK_AFTER_SPECIAL_CHARS":  {Class: "MaskAfterSpecialCharsAlgorithm", Props: specialChars},
	"MASK_BEFORE_SPECIAL_CHARS": {Class: "MaskBeforeSpecialCharsAlgorithm", Props: specialChars},
	"GENERIC_TABLE_RANDOM_REPLACE": {Class: "GenericTableRandomReplaceAlgorithm", Props: []PropCheck{
		{"uppercase-letter-codes", charList}, {"lowercase-letter-codes", charList}, {"digital-codes", charList}, {"special-codes", charList}}},
	"TELEPHONE_RANDOM_REPLACE":                {Class: "TelephoneRandomReplaceAlgorithm", Props: []PropCheck{{"network-numbers", integerList}}},
	"PERSONAL_IDENTITY_NUMBER_RANDOM_REPLACE": {Class: "PersonalIdentityNumberRandomReplaceAlgorithm", Props: []PropCheck{{"alpha-two-country-area-code", notEmptyWhenGiven}}},
}

// EncryptAlgorithms are the encrypt algorithm types, as upstream's encrypt
// algorithms (and AES's properties provider) check them.
var EncryptAlgorithms = AlgorithmFamily{
	"AES":              {Class: "DefaultAESPropertiesProvider", Props: []PropCheck{{"aes-key-value", notNullOrEmpty}, {"digest-algorithm-name", notNullOrEmpty}}},
	"RC4":              {Class: "RC4EncryptAlgorithm", Props: []PropCheck{{"rc4-key-value", rc4Key}}},
	"MD5":              {Class: "MD5AssistedEncryptAlgorithm"},                                                                                   // salt is optional
	"CHAR_DIGEST_LIKE": {Class: "CharDigestLikeEncryptAlgorithm", Props: []PropCheck{{"delta", decimal}, {"mask", decimal}, {"start", decimal}}}, // dict is optional
}

var (
	firstNLastM  = []PropCheck{{"first-n", positiveInteger}, {"last-m", positiveInteger}, {"replace-char", singleChar}}
	fromXToY     = []PropCheck{{"from-x", positiveInteger}, {"to-y", positiveInteger}, {"replace-char", singleChar}}
	specialChars = []PropCheck{{"special-chars", atLeastOneChar}, {"replace-char", singleChar}}
)

// Types returns f's algorithm types, sorted.
func (f AlgorithmFamily) Types() []string { return slices.Sorted(maps.Keys(f)) }

// Check returns upstream's AlgorithmInitializationException (10400, 44000)
// when the init of algorithm type typ would refuse props (a map of prop
// name to value; a value that is not a string counts as its text, a nil
// one as absent), nil when it accepts them or typ is not one of f's types
// (the type's own check refuses that).
func (f AlgorithmFamily) Check(typ string, props map[string]any) *sqlerr.Error {
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
// decimal digits, in 32 bits).
func javaInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return n, err == nil
}

// The prop checks, with upstream's reasons.

func positiveInteger(key, v string, ok bool) string {
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

// singleChar is one Java char: one UTF-16 unit.
func singleChar(key, v string, ok bool) string {
	switch {
	case !ok:
		return key + " is required"
	case len(utf16.Encode([]rune(v))) != 1:
		return key + "'s length must be one"
	}
	return ""
}

func atLeastOneChar(key, v string, ok bool) string {
	switch {
	case !ok:
		return key + " is required"
	case v == "":
		return key + "'s length must be at least one"
	}
	return ""
}

func notNullOrEmpty(key, v string, _ bool) string {
	if v == "" {
		return key + " can not be null or empty"
	}
	return ""
}

func notEmptyWhenGiven(key, v string, ok bool) string {
	if ok && v == "" {
		return key + " can not be empty"
	}
	return ""
}

// decimal is an optional Java int.
func decimal(key, v string, ok bool) string {
	if _, isInt := javaInt(v); ok && !isInt {
		return key + " can only be a decimal number"
	}
	return ""
}

// charList is an optional comma-separated list whose trimmed items are
// each taken as their first character: an empty item has none (upstream's
// init fails on it, with this reason when the whole list is empty).
func charList(key, v string, ok bool) string {
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

// integerList is an optional comma-separated list of Java ints; an empty
// list is the default's.
func integerList(_, v string, ok bool) string {
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

// rc4Key is a key of 5 to 255 bytes in UTF-8.
func rc4Key(_, v string, _ bool) string {
	if len(v) < 5 || len(v) > 255 {
		return "Key length has to be between 5 and 255"
	}
	return ""
}

func fromXNotAfterToY(props map[string]string) string {
	x, _ := javaInt(props["from-x"])
	y, _ := javaInt(props["to-y"])
	if x > y {
		return "fromX must be less than or equal to toY"
	}
	return ""
}
