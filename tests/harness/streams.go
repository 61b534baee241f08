package harness

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/tenantdb/tenantdb/internal/sdkhttp"
)

// Streams returns a DynamoDB Streams client of s for credential c. Like
// Client's, it does not retry, and it shares Client's HTTP client (see
// httpClient: a client built on the SDK's default one sees about one
// request in a thousand fail with "use of closed network connection").
func (s *Server) Streams(c Credential) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
		RetryMaxAttempts: 1,
		HTTPClient:       httpClient,
	})
}

// HTTPClient returns the HTTP client the harness's SDK clients share, for
// a test that builds its own client (other credentials, other options).
func HTTPClient() sdkhttp.Doer { return httpClient }
