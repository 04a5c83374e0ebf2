package explorer

import (
	"strings"
	"testing"
)

func TestCoins(t *testing.T) {
	e := &Explorer{unit: "BTC"}
	for sats, want := range map[string]string{
		"5000000000":       "50 BTC",
		"0":                "0 BTC",
		"1":                "0.00000001 BTC",
		"10000":            "0.0001 BTC",
		"-150000000":       "-1.5 BTC",
		"2100000000000000": "21000000 BTC",
		"":                 "",
	} {
		if got := e.coins(sats); got != want {
			t.Errorf("coins(%q) = %q, want %q", sats, got, want)
		}
	}
}

func TestParamRefusesWhatNoPageTakes(t *testing.T) {
	xpub := "xpub6CUGRUonZSQ4TWtTMmzXdrXDtypWKiKrhko4egpiMZbpiaQL2jkwSB1icqYh2cfDfVxdx4df189oLKnC5fSwqPfgyP3hooxujYzAu3fDVmz"
	if got, err := param(xpub, "xpub"); err != nil || got != xpub {
		t.Fatalf("an xpub: %q %v", got, err)
	}
	long := strings.Repeat("a", 10_000)
	got, err := param(long, "txid")
	if err == nil || got != "" {
		t.Fatalf("a 10 KB txid: %q %v", got, err)
	}
	if msg := err.Error(); strings.Contains(msg, long[:maxParam+1]) || !strings.Contains(msg, "10000 characters") {
		t.Fatalf("the refusal of a 10 KB txid echoes it or does not say its length: %.300s", msg)
	}
}
