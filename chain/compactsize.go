package chain

import "encoding/binary"

// Bitcoin's CompactSize ("varint") on byte slices.
//
// wire.ReadVarInt needs an io.Reader; the transaction decoder works on a
// byte slice so that scripts can alias the transaction's own bytes instead
// of being copied, and a reader wrapper per field would cost more than the
// parsing itself. These two functions follow wire's rules exactly
// (canonical encodings only), which compactsize_test.go checks against
// wire.ReadVarInt / wire.WriteVarInt.

// DecodeCompactSize decodes the CompactSize at the start of b, returning the
// value and its width in bytes.
func DecodeCompactSize(b []byte) (value uint64, width int, err error) {
	if len(b) == 0 {
		return 0, 0, ErrTruncated
	}
	switch b[0] {
	case 0xfd:
		if len(b) < 3 {
			return 0, 0, ErrTruncated
		}
		value = uint64(binary.LittleEndian.Uint16(b[1:]))
		if value < 0xfd {
			return 0, 0, ErrNonCanonicalVarInt
		}
		return value, 3, nil
	case 0xfe:
		if len(b) < 5 {
			return 0, 0, ErrTruncated
		}
		value = uint64(binary.LittleEndian.Uint32(b[1:]))
		if value <= 0xffff {
			return 0, 0, ErrNonCanonicalVarInt
		}
		return value, 5, nil
	case 0xff:
		if len(b) < 9 {
			return 0, 0, ErrTruncated
		}
		value = binary.LittleEndian.Uint64(b[1:])
		if value <= 0xffffffff {
			return 0, 0, ErrNonCanonicalVarInt
		}
		return value, 9, nil
	default:
		return uint64(b[0]), 1, nil
	}
}

// compactSizeWidth is the encoded width announced by a CompactSize's first
// byte.
func compactSizeWidth(first byte) int {
	switch first {
	case 0xfd:
		return 3
	case 0xfe:
		return 5
	case 0xff:
		return 9
	default:
		return 1
	}
}

// AppendCompactSize appends the canonical CompactSize encoding of v.
func AppendCompactSize(dst []byte, v uint64) []byte {
	switch {
	case v < 0xfd:
		return append(dst, byte(v))
	case v <= 0xffff:
		return binary.LittleEndian.AppendUint16(append(dst, 0xfd), uint16(v))
	case v <= 0xffffffff:
		return binary.LittleEndian.AppendUint32(append(dst, 0xfe), uint32(v))
	default:
		return binary.LittleEndian.AppendUint64(append(dst, 0xff), v)
	}
}
