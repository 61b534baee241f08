// Package conformance holds black-box tests of tenantdb's DynamoDB API
// with the clients users use: aws-sdk-go-v2, the AWS CLI and boto3. They
// run against an in-process server, or against a built binary when
// TENANTDB_BIN is set (see package harness).
package conformance
