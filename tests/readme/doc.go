// Package readme proves that the commands README.md shows run as shown: it
// extracts every ```sh block and runs it with bash, the AWS CLI and the Go
// toolchain against a server that one of the blocks starts.
//
// What is changed, and nothing else:
//   - The blocks run in a fresh directory that looks like a clone's root
//     (go.mod, go.sum, cmd, internal and tests are symbolic links to this
//     repository), so `./cmd/tenantdb`, `./tenantdb-data` and
//     `tests/seeds/...` mean what they mean in a clone, while the data
//     directory and the built binary stay out of the repository.
//   - The server listens on a free port instead of 8000: the literal
//     127.0.0.1:8000 in a command becomes 127.0.0.1:<port>, and the
//     environment carries TENANTDB_ADDR (for serve) and TENANTDB_ENDPOINT
//     (for the tenantdb CLI), the variables README.md documents.
//   - The environment has no AWS_* or TENANTDB_* variables of the caller, an
//     empty AWS config file and no pager.
//
// A command that starts the server (`serve`) runs in the background for the
// rest of the test; commands listed in skipped do not run, each for the
// reason given. Inline code in the prose is not a command.
package readme
