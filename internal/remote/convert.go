package remote

import (
	"errors"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Conversions between tenantdb's attribute values and the SDK's, and the
// mapping of the engine's errors onto apierr. Everything the engine
// answers passes through here.

func toAV(v attr.Value) types.AttributeValue {
	switch v.Type {
	case attr.S:
		return &types.AttributeValueMemberS{Value: v.S}
	case attr.N:
		return &types.AttributeValueMemberN{Value: v.N.String()}
	case attr.B:
		return &types.AttributeValueMemberB{Value: v.B}
	case attr.BOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Bool}
	case attr.NULL:
		return &types.AttributeValueMemberNULL{Value: true}
	case attr.M:
		return &types.AttributeValueMemberM{Value: toItem(v.M)}
	case attr.L:
		l := make([]types.AttributeValue, len(v.L))
		for i, e := range v.L {
			l[i] = toAV(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case attr.SS:
		return &types.AttributeValueMemberSS{Value: append([]string(nil), v.SS...)}
	case attr.NS:
		ns := make([]string, len(v.NS))
		for i, n := range v.NS {
			ns[i] = n.String()
		}
		return &types.AttributeValueMemberNS{Value: ns}
	case attr.BS:
		return &types.AttributeValueMemberBS{Value: v.BS}
	}
	panic("remote: attribute value of invalid type")
}

func toItem(it attr.Item) map[string]types.AttributeValue {
	if it == nil {
		return nil
	}
	m := make(map[string]types.AttributeValue, len(it))
	for k, v := range it {
		m[k] = toAV(v)
	}
	return m
}

func toValues(vs map[string]attr.Value) map[string]types.AttributeValue {
	if len(vs) == 0 {
		return nil
	}
	return toItem(vs)
}

func fromAV(av types.AttributeValue) (attr.Value, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return attr.Str(v.Value), nil
	case *types.AttributeValueMemberN:
		n, err := attr.ParseNumber(v.Value)
		return attr.Num(n), err
	case *types.AttributeValueMemberB:
		return attr.Bin(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return attr.BoolV(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return attr.Null(), nil
	case *types.AttributeValueMemberM:
		m, err := fromItem(v.Value)
		return attr.Map(m), err
	case *types.AttributeValueMemberL:
		l := make([]attr.Value, len(v.Value))
		for i, e := range v.Value {
			var err error
			if l[i], err = fromAV(e); err != nil {
				return attr.Value{}, err
			}
		}
		return attr.List(l), nil
	case *types.AttributeValueMemberSS:
		return attr.Value{Type: attr.SS, SS: v.Value}, nil
	case *types.AttributeValueMemberNS:
		ns := make([]attr.Number, len(v.Value))
		for i, s := range v.Value {
			var err error
			if ns[i], err = attr.ParseNumber(s); err != nil {
				return attr.Value{}, err
			}
		}
		return attr.Value{Type: attr.NS, NS: ns}, nil
	case *types.AttributeValueMemberBS:
		return attr.Value{Type: attr.BS, BS: v.Value}, nil
	}
	return attr.Value{}, apierr.New(apierr.Internal, "the engine answered an attribute value of unknown type %T", av)
}

func fromItem(m map[string]types.AttributeValue) (attr.Item, error) {
	if m == nil {
		return nil, nil
	}
	it := make(attr.Item, len(m))
	for k, av := range m {
		v, err := fromAV(av)
		if err != nil {
			return nil, err
		}
		it[k] = v
	}
	return it, nil
}

// kindByName maps DynamoDB's error type names to apierr kinds.
var kindByName = func() map[string]apierr.Kind {
	m := make(map[string]apierr.Kind, apierr.KindCount)
	for k := range apierr.KindCount {
		m[apierr.Kind(k).String()] = apierr.Kind(k)
	}
	return m
}()

// engineErr maps an error of the engine's client onto apierr: the
// engine's DynamoDB error keeps its kind and message (a condition that
// failed is the client's condition that failed); a transport failure is
// ServiceUnavailable. strip removes the physical attributes from items
// the error carries.
// reasonMessages are DynamoDB's messages of the cancellation reasons a
// gateway passes on; a code not listed gets none.
var reasonMessages = map[string]string{
	"ConditionalCheckFailed":          "The conditional request failed",
	"TransactionConflict":             "Transaction is ongoing for the item",
	"ItemCollectionSizeLimitExceeded": "Collection size exceeded.",
	"ProvisionedThroughputExceeded":   "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
	"ThrottlingError":                 "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is automatically scaling your index so please be patient.",
	"ValidationError":                 "One or more parameter values were invalid",
}

func engineErr(err error, strip func(map[string]types.AttributeValue) attr.Item) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// NB: DynamoDB's words, not the engine's: the engine's message
		// may name the gateway's physical attributes or table.
		e := apierr.New(apierr.ConditionalCheckFailed, "The conditional request failed")
		if ccf.Item != nil {
			e.Detail = &wire.ConditionalCheckFailedDetail{Item: strip(ccf.Item)}
		}
		return e
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		d := &wire.TransactionCanceledDetail{}
		codes := make([]string, 0, len(tce.CancellationReasons))
		for _, r := range tce.CancellationReasons {
			cr := wire.CancellationReason{}
			if r.Code != nil {
				cr.Code = *r.Code
			}
			// NB: a reason's message is DynamoDB's for its code, never the
			// engine's text (which may name physical attributes).
			cr.Message = reasonMessages[cr.Code]
			if r.Item != nil {
				cr.Item = strip(r.Item)
			}
			d.CancellationReasons = append(d.CancellationReasons, cr)
			codes = append(codes, cr.Code)
		}
		e := apierr.New(apierr.TransactionCanceled, "Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", "))
		e.Detail = d
		return e
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		k, ok := kindByName[ae.ErrorCode()]
		switch {
		case !ok:
			return apierr.Wrap(apierr.Internal, err, "the storage engine failed")
		case k == apierr.ResourceNotFound, k == apierr.AccessDenied, k == apierr.UnrecognizedClient,
			k == apierr.InvalidSignature, k == apierr.MissingAuthenticationToken, k == apierr.ExpiredToken:
			// The gateway's own physical table or credentials: never the
			// client's fault, and never to be shown to it.
			return apierr.Wrap(apierr.Internal, err, "the storage engine refused the gateway")
		}
		return apierr.Wrap(k, err, "%s", engineMessage(k, ae.ErrorMessage()))
	}
	return apierr.Wrap(apierr.ServiceUnavailable, err, "the storage engine is unavailable")
}

// kindMessages are DynamoDB's messages of the error kinds whose wording
// does not depend on the request: the engine's own text for them is never
// passed on.
var kindMessages = map[apierr.Kind]string{
	apierr.TransactionConflict:             "Transaction is ongoing for the item",
	apierr.ProvisionedThroughputExceeded:   "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
	apierr.Throttling:                      "Rate of requests exceeds the allowed throughput.",
	apierr.ItemCollectionSizeLimitExceeded: "Collection size exceeded.",
}

// physicalMessages map the engine's messages that a logical request the
// gateway accepted can still draw (the limits its physical item meets) to
// the embedded engine's message for the same request; the first whose
// every fragment the engine's message contains wins.
var physicalMessages = []struct {
	has []string
	msg string
}{
	{[]string{"Item size to update has exceeded"}, "Item size to update has exceeded the maximum allowed size"},
	{[]string{"Item size has exceeded"}, "Item size has exceeded the maximum allowed size"},
	{[]string{"range key", "size limit"}, "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"},
	{[]string{"hashkey", "size limit"}, "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"},
	{[]string{"Collection size"}, "Collection size exceeded."},
}

// engineMessage is what a client is told of an engine error of kind k
// with message msg. NB: the engine's text can name the gateway's engine
// table (<prefix>tenantdb), its physical attributes (tenantdb:pk,
// tenantdb:x1p, ...) and indexes (tenantdb-x1) or a collection's key: a
// message naming any of them is never passed on, but mapped to the
// embedded engine's words for the same request, or to a message that
// names nothing physical.
func engineMessage(k apierr.Kind, msg string) string {
	if m, ok := kindMessages[k]; ok {
		return m
	}
	for _, p := range physicalMessages {
		all := true
		for _, h := range p.has {
			all = all && strings.Contains(msg, h)
		}
		if all {
			return p.msg
		}
	}
	if physical(msg) {
		if k == apierr.Validation {
			return "One or more parameter values were invalid: the storage engine refused the request as the gateway stores it"
		}
		return "The storage engine refused the request"
	}
	return msg
}

// physical reports whether an engine message may name something of the
// gateway's physical layout: the engine table or a reserved attribute or
// index (all contain "tenantdb"), or a collection key (hex#...).
func physical(msg string) bool {
	l := strings.ToLower(msg)
	return strings.Contains(l, "tenantdb") || strings.Contains(l, "meta#") || strings.Contains(l, "ctl#") || collectionKey.MatchString(msg)
}

// collectionKey matches a physical partition key value: hex, '#', more.
var collectionKey = regexp.MustCompile(`[0-9a-f]{8,}#`)
