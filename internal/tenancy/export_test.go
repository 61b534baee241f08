package tenancy

// InjectLeadingKeysLeak switches the leading-keys check off until the
// returned function is called (see testHookSkipLeadingKeys).
func InjectLeadingKeysLeak() (restore func()) {
	testHookSkipLeadingKeys.Store(true)
	return func() { testHookSkipLeadingKeys.Store(false) }
}

// InjectCrossTenantAdminLeak admits tenant admin keys to every tenant's
// admin routes until the returned function is called (see
// testHookCrossTenantAdmin).
func InjectCrossTenantAdminLeak() (restore func()) {
	testHookCrossTenantAdmin.Store(true)
	return func() { testHookCrossTenantAdmin.Store(false) }
}
