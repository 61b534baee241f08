package admin

import "github.com/tenantdb/tenantdb/client"

// The tests drive the handlers through the public client.
type (
	Client     = client.Client
	Error      = client.Error
	AuditQuery = client.AuditQuery
)
