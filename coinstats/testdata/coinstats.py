#!/usr/bin/env python3
"""An independent computation of Bitcoin Core's UTXO set statistics, for the
Go tests of package coinstats: its own ChaCha20 (RFC 8439 block function),
Python's big integers for MuHash3072, hashlib for SHA-256.

Input on stdin, one coin per line:
    add|remove TXID VOUT HEIGHT COINBASE VALUE SCRIPT
TXID in hex (internal byte order), SCRIPT as "s" and its hex (so that an
empty script is a field too), the rest decimal.
Output: one JSON object with txouts, total_amount, muhash and, over the
coins added and not removed, hash_serialized_3.
"""
import hashlib
import json
import struct
import sys

MODULUS = 2**3072 - 1103717


def rotl32(v, c):
    return ((v << c) & 0xffffffff) | (v >> (32 - c))


def quarter_round(s, a, b, c, d):
    s[a] = (s[a] + s[b]) & 0xffffffff
    s[d] = rotl32(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & 0xffffffff
    s[b] = rotl32(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & 0xffffffff
    s[d] = rotl32(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & 0xffffffff
    s[b] = rotl32(s[b] ^ s[c], 7)


def chacha20_block(key, counter):
    """One 64-byte ChaCha20 block, zero nonce."""
    initial = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
    initial += list(struct.unpack('<8I', key)) + [counter, 0, 0, 0]
    s = list(initial)
    for _ in range(10):
        quarter_round(s, 0, 4, 8, 12)
        quarter_round(s, 1, 5, 9, 13)
        quarter_round(s, 2, 6, 10, 14)
        quarter_round(s, 3, 7, 11, 15)
        quarter_round(s, 0, 5, 10, 15)
        quarter_round(s, 1, 6, 11, 12)
        quarter_round(s, 2, 7, 8, 13)
        quarter_round(s, 3, 4, 9, 14)
    return struct.pack('<16I', *[(x + y) & 0xffffffff for x, y in zip(s, initial)])


def element(data):
    key = hashlib.sha256(data).digest()
    stream = b''.join(chacha20_block(key, i) for i in range(6))
    return int.from_bytes(stream, 'little') % MODULUS


def compact_size(n):
    if n < 0xfd:
        return bytes([n])
    if n <= 0xffff:
        return b'\xfd' + n.to_bytes(2, 'little')
    if n <= 0xffffffff:
        return b'\xfe' + n.to_bytes(4, 'little')
    return b'\xff' + n.to_bytes(8, 'little')


def txoutser(txid, vout, height, coinbase, value, script):
    return (txid + vout.to_bytes(4, 'little') + (height * 2 + coinbase).to_bytes(4, 'little')
            + value.to_bytes(8, 'little') + compact_size(len(script)) + script)


def in_set(height, script):
    return height > 0 and not (script[:1] == b'\x6a' or len(script) > 10000)


def main():
    numerator, denominator = 1, 1
    txouts, total = 0, 0
    present = {}
    for line in sys.stdin:
        op, txid, vout, height, coinbase, value, script = line.split()
        txid, script = bytes.fromhex(txid), bytes.fromhex(script[1:])
        vout, height, coinbase, value = int(vout), int(height), int(coinbase), int(value)
        if not in_set(height, script):
            continue
        ser = txoutser(txid, vout, height, coinbase, value, script)
        if op == 'add':
            numerator = numerator * element(ser) % MODULUS
            txouts, total = txouts + 1, total + value
            present[(txid, vout)] = ser
        else:
            denominator = denominator * element(ser) % MODULUS
            txouts, total = txouts - 1, total - value
            present.pop((txid, vout), None)
    quotient = numerator * pow(denominator, -1, MODULUS) % MODULUS
    muhash = hashlib.sha256(quotient.to_bytes(384, 'little')).digest()
    serialized = hashlib.sha256()
    for key in sorted(present):
        serialized.update(present[key])
    hash_serialized = hashlib.sha256(serialized.digest()).digest()
    print(json.dumps({'txouts': txouts, 'total_amount': total, 'muhash': muhash[::-1].hex(),
                      'hash_serialized_3': hash_serialized[::-1].hex()}))


if __name__ == '__main__':
    main()
