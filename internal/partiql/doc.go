// Package partiql is DynamoDB's dialect of PartiQL: a parser with an AST
// (Parse), the translation of a statement onto one operation of the item
// API (Translate), and the execution of ExecuteStatement,
// BatchExecuteStatement and ExecuteTransaction on those operations.
//
// Statements add no semantics of their own: a SELECT becomes a GetItem,
// Query or Scan, an INSERT a conditional PutItem, an UPDATE an UpdateItem,
// a DELETE a DeleteItem, their conditions and paths DynamoDB expressions
// that package expr parses and evaluates. Tenancy, isolation, metering and
// quotas are therefore exactly the item API's.
package partiql
