package model

import "testing"

// TestParseErrorCodeInvertsString checks that every code's wire name reads
// back as the code, and that an unknown name is refused, as a remote
// caller decodes them.
func TestParseErrorCodeInvertsString(t *testing.T) {
	for c := CodeTxNotFound; c <= CodeInvalidParameter; c++ {
		got, ok := ParseErrorCode(c.String())
		if !ok || got != c {
			t.Errorf("ParseErrorCode(%q) = %v, %v; want %v", c.String(), got, ok, c)
		}
	}
	for _, name := range []string{"", "spent", "ErrorCode(99)", "NO_SUCH_CODE"} {
		if c, ok := ParseErrorCode(name); ok {
			t.Errorf("ParseErrorCode(%q) = %v, want refused", name, c)
		}
	}
}
