package harness

import "testing"

// StartBinaryEnv is StartBinary with env (NAME=value) added to the
// server's environment, such as a crash point's (internal/crashpoint).
func StartBinaryEnv(t testing.TB, bin, dataDir string, env []string, extraArgs ...string) *Server {
	t.Helper()
	return startBinary(t, bin, dataDir, Options{Fairness: true, Env: env}, extraArgs...)
}
