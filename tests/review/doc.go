// Package review holds black-box regression tests for findings of the
// security and correctness review: each test attacks a running server
// (tests/harness) the way the finding describes and fails if the hole
// reopens.
package review
