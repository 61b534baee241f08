// Package dynamo is the one list of the DynamoDB operations tenantdb
// serves, and the seam between the server and a backend.
//
// Each operation is one entry of the table in ops.go: its name, the
// service prefix of its X-Amz-Target header, its authorization class, the
// tables whose items it touches, and the Backend method that executes it
// (which also gives its input type). Everything else derives from that
// entry: the server's routing and decoding (FromTarget, Op.Decode), the
// guard's decision (Op.Action), per-table quotas (Op.Tables), metric and
// metering labels (Names), policy validation (Lookup), and the binding of
// decoded requests to a Backend (Bind).
//
// Adding an operation therefore touches one place here: a method on
// Backend and an entry in the table, side by side in ops.go (plus, of
// course, its wire types and its implementation in the engine). The
// server, the guard, quotas and metering follow without change, and
// dynamo_test.go proves that they do.
//
// Decorators such as quota's admission control wrap a Handler, which
// serves every operation through one method, so a decorator is written
// once rather than once per operation.
package dynamo

import (
	"context"
	"slices"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Op is one operation of the table. Ops are shared and immutable; compare
// them by pointer.
type Op struct {
	// Action is what the guard admits: the operation's name ("PutItem")
	// and its class.
	tenancy.Action
	// Target is the X-Amz-Target header value that names the operation
	// ("DynamoDB_20120810.PutItem").
	Target string

	newIn   func() any
	tables  func(in any) []string
	classOf func(in any) tenancy.ActionClass
	call    func(ctx context.Context, b Backend, s tenancy.Scope, in any) (wire.Output, error)
}

// New returns a new, zero input value for the operation
// (*wire.PutItemInput for PutItem).
func (op *Op) New() any { return op.newIn() }

// Decode parses a request body into a new input value for the operation.
// Errors are those of wire.Decode.
func (op *Op) Decode(body []byte) (any, error) {
	in := op.newIn()
	if err := wire.Decode(body, in); err != nil {
		return nil, err
	}
	return in, nil
}

// Tables returns the tables whose items the decoded input in reads or
// writes (possibly with repeats), for per-table quotas; it is nil for
// operations on no items. in must be an input of op.
func (op *Op) Tables(in any) []string {
	if op.tables == nil {
		return nil
	}
	return op.tables(in)
}

// ClassOf returns the class of what the decoded input in of op does: the
// operation's Class, except for the PartiQL operations, which the guard
// admits as reads and which are writes when a statement writes (quotas
// charge them to the write bucket). in must be an input of op.
func (op *Op) ClassOf(in any) tenancy.ActionClass {
	if op.classOf == nil {
		return op.Class
	}
	return op.classOf(in)
}

// Handler serves every operation through one method: in is the decoded
// input of op, s the Scope the guard issued for op. Bind makes one of a
// Backend; decorators (quotas, metering) wrap one Handler in another.
type Handler interface {
	Handle(ctx context.Context, s tenancy.Scope, op *Op, in any) (wire.Output, error)
}

// Bind returns the Handler that runs each operation on b's method for it.
func Bind(b Backend) Handler { return bound{b} }

type bound struct{ b Backend }

func (h bound) Handle(ctx context.Context, s tenancy.Scope, op *Op, in any) (wire.Output, error) {
	return op.call(ctx, h.b, s, in)
}

// define builds the table entry of the operation that Backend method m
// executes. tables may be nil for operations on no items.
func define[I, O any, PO interface {
	*O
	wire.Output
}](service, name string, class tenancy.ActionClass, m func(Backend, context.Context, tenancy.Scope, *I) (PO, error), tables func(*I) []string) *Op {
	op := &Op{
		Action: tenancy.Action{Name: name, Class: class},
		Target: service + "." + name,
		newIn:  func() any { return new(I) },
		call: func(ctx context.Context, b Backend, s tenancy.Scope, in any) (wire.Output, error) {
			out, err := m(b, ctx, s, in.(*I))
			if err != nil || out == nil {
				return nil, err // never a typed nil in the interface
			}
			return out, nil
		},
	}
	if tables != nil {
		op.tables = func(in any) []string { return tables(in.(*I)) }
	}
	return op
}

// refine gives op a class that depends on its input (see ClassOf).
func refine[I any](op *Op, class func(*I) tenancy.ActionClass) *Op {
	op.classOf = func(in any) tenancy.ActionClass { return class(in.(*I)) }
	return op
}

// The indexes of the table, built once.
var (
	byName   = index(func(op *Op) string { return op.Name })
	byTarget = index(func(op *Op) string { return op.Target })
	names    = func() []string {
		n := make([]string, len(table))
		for i, op := range table {
			n[i] = op.Name
		}
		slices.Sort(n)
		return n
	}()
)

func index(key func(*Op) string) map[string]*Op {
	m := make(map[string]*Op, len(table))
	for _, op := range table {
		m[key(op)] = op
	}
	return m
}

// Ops returns every operation, in the table's order.
func Ops() []*Op { return slices.Clone(table) }

// Names returns the names of all operations, sorted.
func Names() []string { return slices.Clone(names) }

// Lookup returns the operation named name ("PutItem") and whether
// tenantdb serves one.
func Lookup(name string) (*Op, bool) {
	op, ok := byName[name]
	return op, ok
}

// FromTarget returns the operation an X-Amz-Target header value names
// ("DynamoDB_20120810.PutItem") and whether tenantdb serves one.
func FromTarget(target string) (*Op, bool) {
	op, ok := byTarget[target]
	return op, ok
}

// ActionOf returns what the guard admits for the operation named name.
// For a name tenantdb does not serve the class is tenancy.ClassUnknown,
// which the guard refuses with UnknownOperation.
func ActionOf(name string) tenancy.Action {
	if op, ok := byName[name]; ok {
		return op.Action
	}
	return tenancy.Action{Name: name}
}
