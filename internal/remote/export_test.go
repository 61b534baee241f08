package remote

// EngineStreamARNForTest returns the engine table's stream ARN, once a
// logical stream enabled it ("" before).
func EngineStreamARNForTest(b *Backend) string {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return b.st.arn
}
