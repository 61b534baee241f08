package quota

import "github.com/tenantdb/tenantdb/internal/wire"

// tablesOf returns the tables a decoded request touches (possibly with
// repeats), for per-table quotas. It allocates only for multi-table
// operations.
func tablesOf(in any) []string {
	switch in := in.(type) {
	case *wire.GetItemInput:
		return []string{in.TableName}
	case *wire.PutItemInput:
		return []string{in.TableName}
	case *wire.UpdateItemInput:
		return []string{in.TableName}
	case *wire.DeleteItemInput:
		return []string{in.TableName}
	case *wire.QueryInput:
		return []string{in.TableName}
	case *wire.ScanInput:
		return []string{in.TableName}
	case *wire.BatchGetItemInput:
		out := make([]string, 0, len(in.RequestItems))
		for t := range in.RequestItems {
			out = append(out, t)
		}
		return out
	case *wire.BatchWriteItemInput:
		out := make([]string, 0, len(in.RequestItems))
		for t := range in.RequestItems {
			out = append(out, t)
		}
		return out
	case *wire.TransactGetItemsInput:
		out := make([]string, 0, len(in.TransactItems))
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, it.Get.TableName)
			}
		}
		return out
	case *wire.TransactWriteItemsInput:
		out := make([]string, 0, len(in.TransactItems))
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, it.Put.TableName)
			case it.Update != nil:
				out = append(out, it.Update.TableName)
			case it.Delete != nil:
				out = append(out, it.Delete.TableName)
			case it.ConditionCheck != nil:
				out = append(out, it.ConditionCheck.TableName)
			}
		}
		return out
	}
	return nil
}
