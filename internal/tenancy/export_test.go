package tenancy

// InjectLeadingKeysLeak switches the leading-keys check off until the
// returned function is called (see testHookSkipLeadingKeys).
func InjectLeadingKeysLeak() (restore func()) {
	testHookSkipLeadingKeys.Store(true)
	return func() { testHookSkipLeadingKeys.Store(false) }
}
