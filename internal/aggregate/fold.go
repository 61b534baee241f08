package aggregate

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// A group is identified by its key: the group value's type byte ('S',
// 'N', 'B' or 'T' for a boolean) followed by its text. Numbers are in
// canonical form, so 1.50 and 1.5 are one group; binary values are
// base64. Items whose group attribute is missing or of another type (a
// map, list, set or null) belong to no group and are not counted, as an
// item without an index key is not in a sparse index.

// groupOf returns the group key of image img, or ok false when img does
// not count (no image, no group attribute, or the where expression does
// not hold).
func (c *compiled) groupOf(tenant string, img attr.Item) (key string, ok bool, err error) {
	if img == nil {
		return "", false, nil
	}
	v, has := img[c.def.GroupBy]
	if !has {
		return "", false, nil
	}
	var typ byte
	var text string
	switch v.Type {
	case attr.S:
		typ, text = 'S', v.S
		if sep := c.def.GroupAfter; sep != "" {
			if i := strings.LastIndex(text, sep); i >= 0 {
				text = text[i+len(sep):]
			}
		}
	case attr.N:
		typ, text = 'N', v.N.String()
	case attr.B:
		typ, text = 'B', base64.StdEncoding.EncodeToString(v.B)
	case attr.BOOL:
		typ, text = 'T', fmt.Sprint(v.Bool)
	default:
		return "", false, nil
	}
	if c.where != nil {
		match, err := c.where.Eval(img)
		if err != nil || !match {
			return "", false, err
		}
	}
	return string(typ) + text, true, nil
}

// groupText returns the group value as shown (the key without its type).
func groupText(key string) string { return key[1:] }

// groupState is one group's count and sums.
type groupState struct {
	Count int64
	Sums  map[string]*Decimal
}

func (g *groupState) empty() bool {
	if g.Count != 0 {
		return false
	}
	for _, s := range g.Sums {
		if !s.IsZero() {
			return false
		}
	}
	return true
}

// add adds (sign 1) or subtracts (sign -1) img's contribution.
func (g *groupState) add(c *compiled, img attr.Item, sign int) {
	g.Count += int64(sign)
	for _, a := range c.def.Sum {
		v, ok := img[a]
		if !ok || v.Type != attr.N {
			continue // NB: like SUM in SQL, a missing or non-number value adds nothing
		}
		if g.Sums == nil {
			g.Sums = map[string]*Decimal{}
		}
		s := g.Sums[a]
		if s == nil {
			s = new(Decimal)
			g.Sums[a] = s
		}
		if sign > 0 {
			s.Add(DecimalOf(v.N))
		} else {
			s.Sub(DecimalOf(v.N))
		}
	}
}

// storedGroup is a group's persisted form.
type storedGroup struct {
	Count int64             `json:"c"`
	Sums  map[string]string `json:"s,omitempty"`
}

func (g *groupState) marshal() []byte {
	sg := storedGroup{Count: g.Count}
	for a, s := range g.Sums {
		if s.IsZero() {
			continue
		}
		if sg.Sums == nil {
			sg.Sums = map[string]string{}
		}
		sg.Sums[a] = s.String()
	}
	b, _ := json.Marshal(sg)
	return b
}

func unmarshalGroup(b []byte) (*groupState, error) {
	var sg storedGroup
	if err := json.Unmarshal(b, &sg); err != nil {
		return nil, fmt.Errorf("aggregate: decode group: %w", err)
	}
	g := &groupState{Count: sg.Count}
	for a, s := range sg.Sums {
		d, err := ParseDecimal(s)
		if err != nil {
			return nil, err
		}
		if g.Sums == nil {
			g.Sums = map[string]*Decimal{}
		}
		g.Sums[a] = &d
	}
	return g, nil
}

// fold applies changes to the groups they touch. load reads a group's
// current state (nil if it has none); touched collects the new states.
type fold struct {
	c       *compiled
	tenant  string
	load    func(key string) (*groupState, error)
	touched map[string]*groupState
}

func newFold(c *compiled, tenant string, load func(string) (*groupState, error)) *fold {
	return &fold{c: c, tenant: tenant, load: load, touched: map[string]*groupState{}}
}

func (f *fold) group(key string) (*groupState, error) {
	if g, ok := f.touched[key]; ok {
		return g, nil
	}
	g, err := f.load(key)
	if err != nil {
		return nil, err
	}
	if g == nil {
		g = &groupState{}
	}
	f.touched[key] = g
	return g, nil
}

// apply folds one change: the old image's contribution leaves its group,
// the new image's joins its group. A change of the aggregate's own
// materialised item is ignored.
func (f *fold) apply(e *Entry) error {
	if f.c.ownItem(f.tenant, e.Keys) {
		return nil
	}
	var old, new attr.Item
	if e.Event != Insert {
		old = e.Old
	}
	if e.Event != Remove {
		new = e.New
	}
	return f.change(old, new)
}

// change folds an item going from old to new (either nil).
func (f *fold) change(old, new attr.Item) error {
	if k, ok, err := f.c.groupOf(f.tenant, old); err != nil {
		return err
	} else if ok {
		g, err := f.group(k)
		if err != nil {
			return err
		}
		g.add(f.c, old, -1)
	}
	if k, ok, err := f.c.groupOf(f.tenant, new); err != nil {
		return err
	} else if ok {
		g, err := f.group(k)
		if err != nil {
			return err
		}
		g.add(f.c, new, 1)
	}
	return nil
}

// keys returns the touched group keys in order.
func (f *fold) keys() []string {
	ks := make([]string, 0, len(f.touched))
	for k := range f.touched {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// itemKey returns the materialised item's key for group key, or nil if
// the aggregate is not materialised.
func (c *compiled) itemKey(tenant, group string) attr.Item {
	if len(c.def.Item) == 0 {
		return nil
	}
	k := attr.Item{}
	for a, t := range c.def.Item {
		t = strings.ReplaceAll(t, "{tenant}", tenant)
		k[a] = attr.Str(strings.ReplaceAll(t, "{group}", groupText(group)))
	}
	return k
}

// ownItem reports whether keys are those of one of the aggregate's
// materialised items (for any group).
func (c *compiled) ownItem(tenant string, keys attr.Item) bool {
	if len(c.def.Item) == 0 || len(keys) != len(c.def.Item) {
		return false
	}
	for a, t := range c.def.Item {
		v, ok := keys[a]
		if !ok || v.Type != attr.S {
			return false
		}
		t = strings.ReplaceAll(t, "{tenant}", tenant)
		pre, suf, grouped := strings.Cut(t, "{group}")
		if !grouped {
			if v.S != t {
				return false
			}
			continue
		}
		if len(v.S) < len(pre)+len(suf) || !strings.HasPrefix(v.S, pre) || !strings.HasSuffix(v.S, suf) {
			return false
		}
	}
	return true
}

// item returns the materialised item of a group.
func (c *compiled) item(tenant, group string, g *groupState) (attr.Item, error) {
	it := c.itemKey(tenant, group)
	if c.def.Count {
		n, err := attr.ParseNumber(fmt.Sprint(g.Count))
		if err != nil {
			return nil, err
		}
		it["count"] = attr.Num(n)
	}
	for _, a := range c.def.Sum {
		var s Decimal
		if d := g.Sums[a]; d != nil {
			s = *d
		}
		if n, err := s.Number(); err == nil {
			it["sum_"+a] = attr.Num(n)
		} else {
			// NB: a sum past DynamoDB's 38 digits (or its range) is kept
			// exact, as text, rather than rounded.
			it["sum_"+a] = attr.Str(s.String())
		}
	}
	return it, nil
}
