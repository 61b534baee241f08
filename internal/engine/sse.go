package engine

import (
	"encoding/json"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Encryption at rest, as DynamoDB's SSESpecification and SSEDescription
// describe it. Every value of every table the embedded engine stores is
// sealed with AES-256-GCM under the data key of the tenant it belongs to
// (values.go), whatever CreateTable asked: there is no unencrypted table,
// as in DynamoDB, where a table without SSESpecification is encrypted
// under a key the service owns. So:
//
//   - no SSESpecification, or Enabled false: accepted (DynamoDB's
//     service-owned key; here the tenant's own data key, which the server
//     manages);
//   - Enabled true, without a KMS key or type, or with SSEType AES256:
//     accepted, the same encryption;
//   - SSEType KMS or a KMSMasterKeyId: refused, ValidationException —
//     there is no KMS, and the table must not claim a KMS key;
//   - DescribeTable (and CreateTable's, UpdateTable's answers) report
//     SSEDescription {Status: ENABLED, SSEType: AES256} for every table,
//     without a KMSMasterKeyArn: what the server does.
const (
	sseStatus = "ENABLED"
	sseType   = "AES256"
)

// checkSSE validates an SSESpecification as above. NB: e is nil for other
// backends (BuildTable): they store items elsewhere, so they accept only
// what leaves encryption to that store (absent or Enabled false).
func (e *Engine) checkSSE(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var spec struct {
		Enabled        *bool
		SSEType        string
		KMSMasterKeyId string
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return apierr.Validationf("1 validation error detected: Value at 'sSESpecification' failed to satisfy constraint: Member must be an object")
	}
	switch spec.SSEType {
	case "", sseType, "KMS":
	default:
		return enumErr(spec.SSEType, "sSESpecification.sSEType", "AES256, KMS")
	}
	if spec.SSEType == "KMS" || spec.KMSMasterKeyId != "" {
		return apierr.Validationf("One or more parameter values were invalid: SSESpecification: tenantdb has no KMS keys; every table is encrypted at rest (AES-256-GCM) under each tenant's own data key, which the server manages; omit SSEType and KMSMasterKeyId")
	}
	if e == nil && (spec.Enabled != nil && *spec.Enabled || spec.SSEType != "") {
		return apierr.Validationf("One or more parameter values were invalid: SSESpecification is not supported by this backend: its tables are encrypted, or not, by the engine that stores them")
	}
	return nil
}

// sseDescription is what every table of the engine reports.
func (e *Engine) sseDescription() *wire.SSEDescription {
	return &wire.SSEDescription{Status: sseStatus, SSEType: sseType}
}
