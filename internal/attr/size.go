package attr

// Size returns the number of bytes DynamoDB counts for v (without the
// attribute name), the basis of the 400 KB item limit and of capacity units.
func Size(v Value) int {
	switch v.Type {
	case S:
		return len(v.S)
	case N:
		return numberSize(v.N)
	case B:
		return len(v.B)
	case BOOL, NULL:
		return 1
	case M:
		n := 3
		for k, e := range v.M {
			n += len(k) + Size(e) + 1
		}
		return n
	case L:
		n := 3
		for _, e := range v.L {
			n += Size(e) + 1
		}
		return n
	case SS:
		n := 0
		for _, s := range v.SS {
			n += len(s)
		}
		return n
	case NS:
		n := 0
		for _, e := range v.NS {
			n += numberSize(e)
		}
		return n
	case BS:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize is DynamoDB's approximation: one byte per two significant
// digits plus one.
func numberSize(n Number) int {
	return (len(n.digits)+1)/2 + 1
}

// ItemSize returns the size of an item: the sum of its attribute names'
// UTF-8 lengths and values' sizes.
func ItemSize(it Item) int {
	n := 0
	for k, v := range it {
		n += len(k) + Size(v)
	}
	return n
}
