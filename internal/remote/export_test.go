package remote

import "time"

// EngineStreamARNForTest returns the engine table's stream ARN, once a
// logical stream enabled it ("" before).
func EngineStreamARNForTest(b *Backend) string {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return b.st.arn
}

// SweepGoneForTest sweeps the kept streams of deleted tables whose 24
// hours are over at now, as the gateway's sweep does; it returns how
// many it forgot.
func SweepGoneForTest(b *Backend, now time.Time) (int, error) {
	return b.sweepGoneOnce(b.bg, now)
}
