package redis

import (
	"strconv"
	"sync"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// crc16 is the CRC-16/XMODEM checksum Redis Cluster hashes keys with
// (polynomial 0x1021, initial value 0); the slot of a key is crc16 mod 16384.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotTags returns, for every hash slot, a short string that hashes to it,
// so that a key carrying "{tag}" lands on a slot of our choosing. The table
// is found by trying the base-36 numerals 0, 1, 2, ... in order and keeping
// the first for each slot: deterministic, so every client and every later
// version computes the same tags and finds the records it wrote.
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, slots)
	for n, left := uint64(0), slots; left > 0; n++ {
		t := strconv.FormatUint(n, 36)
		if s := crc16(t) % slots; tags[s] == "" {
			tags[s] = t
			left--
		}
	}
	return tags
})
