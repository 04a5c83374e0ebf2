package index

// txInput is an input of a txAddresses value: what the spent output paid
// to. A coinbase input or one spending an unindexed output has an empty
// addrDesc and value 0.
type txInput struct {
	addrDesc []byte
	value    uint64
}

// txOutput is an output of a txAddresses value.
type txOutput struct {
	addrDesc []byte
	value    uint64
	spent    bool
}

// txAddresses is one value of the txAddresses column.
type txAddresses struct {
	height  uint32
	inputs  []txInput
	outputs []txOutput
	// changed, never stored, marks a value a workset is to write.
	changed bool
}

func packTxAddresses(ta *txAddresses) []byte {
	n := 3
	for i := range ta.inputs {
		n += 4 + len(ta.inputs[i].addrDesc) + 9
	}
	for i := range ta.outputs {
		n += 4 + len(ta.outputs[i].addrDesc) + 9
	}
	b := make([]byte, 0, n)
	b = appendUvarint(b, uint64(ta.height))
	b = appendUvarint(b, uint64(len(ta.inputs)))
	for i := range ta.inputs {
		in := &ta.inputs[i]
		b = appendUvarint(b, uint64(len(in.addrDesc)))
		b = append(b, in.addrDesc...)
		b = appendAmount(b, in.value)
	}
	b = appendUvarint(b, uint64(len(ta.outputs)))
	for i := range ta.outputs {
		out := &ta.outputs[i]
		l := int64(len(out.addrDesc))
		if out.spent {
			l = ^l // a negative length marks a spent output
		}
		b = appendVarint(b, l)
		b = append(b, out.addrDesc...)
		b = appendAmount(b, out.value)
	}
	return b
}

func unpackTxAddresses(key, val []byte) (*txAddresses, error) {
	d := decoder{buf: val}
	ta := &txAddresses{height: d.uint32v("height")}
	// Each input and output takes at least two bytes: length and amount.
	ta.inputs = make([]txInput, d.count("nr_inputs", 2))
	for i := range ta.inputs {
		l := d.uvarint()
		if l > maxAddrDescLen {
			d.fail("input %d addrDesc length %d exceeds %d", i, l, maxAddrDescLen)
		}
		ta.inputs[i].addrDesc = d.bytes(int(l))
		ta.inputs[i].value = d.amount()
	}
	ta.outputs = make([]txOutput, d.count("nr_outputs", 2))
	for i := range ta.outputs {
		out := &ta.outputs[i]
		l := d.varint()
		if l < 0 {
			out.spent, l = true, ^l
		}
		if l > maxAddrDescLen {
			d.fail("output %d addrDesc length %d exceeds %d", i, l, maxAddrDescLen)
		}
		out.addrDesc = d.bytes(int(l))
		out.value = d.amount()
	}
	if err := d.done(cfTxAddresses, key); err != nil {
		return nil, err
	}
	return ta, nil
}
