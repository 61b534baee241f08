package aggregate

import "github.com/tenantdb/tenantdb/internal/changelog"

// The change-log consumer types this package reads.
type (
	Cursor     = changelog.Cursor
	Entry      = changelog.Entry
	FollowPage = changelog.FollowPage
	Record     = changelog.Record
	Event      = changelog.Event
)

// The events.
const (
	Insert = changelog.Insert
	Modify = changelog.Modify
	Remove = changelog.Remove
)

// ParseCursor reads a Cursor.String.
func ParseCursor(s string) (Cursor, error) { return changelog.ParseCursor(s) }
