package attr

// DecodeItemIn decodes an EncodeItem encoding b whose strings the item
// takes from s, which must hold the same bytes as b (s == string(b)): a
// caller decoding several items out of one buffer converts it to a string
// once and hands each item its part of both, so that the items cost one
// copy of the buffer, not one per item. As with DecodeItem, the item
// never refers to b itself.
func DecodeItemIn(b []byte, s string) (Item, error) {
	if len(s) != len(b) {
		return nil, ErrCorrupt
	}
	d := decoder{b: b, s: s}
	it := d.item()
	if d.err != nil || d.i != len(b) {
		return nil, ErrCorrupt
	}
	return it, nil
}
