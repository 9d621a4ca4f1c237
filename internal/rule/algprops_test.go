package rule_test

import (
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/encrypt"
	"github.com/shardkeeper/shardkeeper/internal/rule/mask"
)

// TestAlgorithmPropsCheck checks, for each mask and encrypt algorithm type,
// that a valid props set passes and that each missing or bad prop is
// refused with upstream's AlgorithmInitializationException message.
func TestAlgorithmPropsCheck(t *testing.T) {
	type refusal struct {
		props map[string]any
		want  string // the message
	}
	msg := func(class, reason string) string {
		return "Algorithm '" + class + "' initialization failed, reason is: " + reason + "."
	}
	// without returns valid with key removed; with, with key set to v.
	without := func(valid map[string]any, key string) map[string]any {
		out := map[string]any{}
		for k, v := range valid {
			if k != key {
				out[k] = v
			}
		}
		return out
	}
	with := func(valid map[string]any, key string, v any) map[string]any {
		out := without(valid, key)
		out[key] = v
		return out
	}
	// Cases shared by the types that read first-n/last-m or from-x/to-y
	// and replace-char.
	numbers := func(class string, valid map[string]any, a, b string) []refusal {
		return []refusal{
			{without(valid, a), msg(class, a+" is required")},
			{without(valid, b), msg(class, b+" is required")},
			{without(valid, "replace-char"), msg(class, "replace-char is required")},
			{with(valid, a, "x"), msg(class, a+" must be a valid integer number")},
			{with(valid, a, "3000000000"), msg(class, a+" must be a valid integer number")},
			{with(valid, b, "0"), msg(class, b+" must be a positive integer.")},
			{with(valid, b, "-1"), msg(class, b+" must be a positive integer.")},
			{with(valid, "replace-char", ""), msg(class, "replace-char's length must be one")},
			{with(valid, "replace-char", "**"), msg(class, "replace-char's length must be one")},
			{with(valid, "replace-char", "😀"), msg(class, "replace-char's length must be one")}, // two UTF-16 units
		}
	}
	firstLast := map[string]any{"first-n": "3", "last-m": 4, "replace-char": "*"} // a YAML number counts as its text
	fromTo := map[string]any{"from-x": "1", "to-y": "2", "replace-char": "é"}
	special := map[string]any{"special-chars": "@", "replace-char": "*"}
	specialRefusals := func(class string) []refusal {
		return []refusal{
			{without(special, "special-chars"), msg(class, "special-chars is required")},
			{with(special, "special-chars", ""), msg(class, "special-chars's length must be at least one")},
			{without(special, "replace-char"), msg(class, "replace-char is required")},
		}
	}
	fromToRefusals := func(class string) []refusal {
		return append(numbers(class, fromTo, "from-x", "to-y"),
			refusal{with(fromTo, "from-x", "3"), msg(class, "fromX must be less than or equal to toY")})
	}
	aes := map[string]any{"aes-key-value": "123456abc", "digest-algorithm-name": "SHA-1"}
	for _, tc := range []struct {
		family   rule.Algorithms
		typ      string
		valid    []map[string]any
		refusals []refusal
	}{
		{mask.Algorithms, "MD5", []map[string]any{nil, {"salt": "s"}}, nil},
		{mask.Algorithms, "KEEP_FIRST_N_LAST_M", []map[string]any{firstLast}, numbers("KeepFirstNLastMMaskAlgorithm", firstLast, "first-n", "last-m")},
		{mask.Algorithms, "mask_first_n_last_m", []map[string]any{firstLast}, numbers("MaskFirstNLastMMaskAlgorithm", firstLast, "first-n", "last-m")},
		{mask.Algorithms, "KEEP_FROM_X_TO_Y", []map[string]any{fromTo, with(fromTo, "from-x", "2")}, fromToRefusals("KeepFromXToYMaskAlgorithm")},
		{mask.Algorithms, "MASK_FROM_X_TO_Y", []map[string]any{fromTo}, fromToRefusals("MaskFromXToYMaskAlgorithm")},
		{mask.Algorithms, "MASK_AFTER_SPECIAL_CHARS", []map[string]any{special, with(special, "special-chars", "@@")}, specialRefusals("MaskAfterSpecialCharsAlgorithm")},
		{mask.Algorithms, "MASK_BEFORE_SPECIAL_CHARS", []map[string]any{special}, specialRefusals("MaskBeforeSpecialCharsAlgorithm")},
		{mask.Algorithms, "GENERIC_TABLE_RANDOM_REPLACE", []map[string]any{nil, {"digital-codes": "1, 2", "special-codes": "~", "uppercase-letter-codes": "AB,C"}}, []refusal{
			{map[string]any{"digital-codes": ""}, msg("GenericTableRandomReplaceAlgorithm", "'digital-codes' must be not empty")},
			{map[string]any{"special-codes": "~,,!"}, msg("GenericTableRandomReplaceAlgorithm", "'special-codes' must be not empty")},
			{map[string]any{"lowercase-letter-codes": "a, "}, msg("GenericTableRandomReplaceAlgorithm", "'lowercase-letter-codes' must be not empty")},
		}},
		{mask.Algorithms, "TELEPHONE_RANDOM_REPLACE", []map[string]any{nil, {"network-numbers": ""}, {"network-numbers": "130, 131"}}, []refusal{
			{map[string]any{"network-numbers": "130,1a"}, msg("TelephoneRandomReplaceAlgorithm", "network-number 1a can only be integer number")},
		}},
		{mask.Algorithms, "PERSONAL_IDENTITY_NUMBER_RANDOM_REPLACE", []map[string]any{nil, {"alpha-two-country-area-code": "US"}}, []refusal{
			{map[string]any{"alpha-two-country-area-code": ""}, msg("PersonalIdentityNumberRandomReplaceAlgorithm", "alpha-two-country-area-code can not be empty")},
		}},
		{encrypt.Algorithms, "AES", []map[string]any{aes}, []refusal{
			{without(aes, "aes-key-value"), msg("DefaultAESPropertiesProvider", "aes-key-value can not be null or empty")},
			{with(aes, "aes-key-value", ""), msg("DefaultAESPropertiesProvider", "aes-key-value can not be null or empty")},
			{without(aes, "digest-algorithm-name"), msg("DefaultAESPropertiesProvider", "digest-algorithm-name can not be null or empty")},
		}},
		{encrypt.Algorithms, "RC4", []map[string]any{{"rc4-key-value": "12345"}, {"rc4-key-value": strings.Repeat("k", 255)}}, []refusal{
			{nil, msg("RC4EncryptAlgorithm", "Key length has to be between 5 and 255")},
			{map[string]any{"rc4-key-value": "1234"}, msg("RC4EncryptAlgorithm", "Key length has to be between 5 and 255")},
			{map[string]any{"rc4-key-value": strings.Repeat("k", 256)}, msg("RC4EncryptAlgorithm", "Key length has to be between 5 and 255")},
		}},
		{encrypt.Algorithms, "MD5", []map[string]any{nil, {"salt": "s"}}, nil},
		{encrypt.Algorithms, "CHAR_DIGEST_LIKE", []map[string]any{nil, {"delta": "-2", "mask": 4093, "start": "19968", "dict": "abc"}}, []refusal{
			{map[string]any{"delta": "1.5"}, msg("CharDigestLikeEncryptAlgorithm", "delta can only be a decimal number")},
			{map[string]any{"mask": "0x7fd"}, msg("CharDigestLikeEncryptAlgorithm", "mask can only be a decimal number")},
			{map[string]any{"start": ""}, msg("CharDigestLikeEncryptAlgorithm", "start can only be a decimal number")},
		}},
	} {
		for _, props := range tc.valid {
			if err := tc.family.Check(tc.typ, props); err != nil {
				t.Errorf("%s %v: %v, want it accepted", tc.typ, props, err)
			}
		}
		for _, r := range tc.refusals {
			err := tc.family.Check(tc.typ, r.props)
			if err == nil || err.Code != 10400 || err.SQLState != "44000" || err.Message != r.want {
				t.Errorf("%s %v: %v, want 10400 %q", tc.typ, r.props, err, r.want)
			}
		}
	}
}
