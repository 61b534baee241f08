package node

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/remote"
)

// BackendDynamoDB is Options.Backend for a remote DynamoDB-API engine.
const BackendDynamoDB = "dynamodb"

// Remote configures the remote backend. The engine's credentials come
// from the standard AWS chain (environment, shared config and
// credentials files, profile), as for any AWS tool.
type Remote struct {
	// Endpoint is the engine's URL; "" means AWS DynamoDB in Region.
	Endpoint string
	// Region is the engine's region; "" means the AWS chain's, else
	// Options.Region.
	Region string
	// TablePrefix prefixes the name of the engine table the backend keeps
	// everything in (<TablePrefix>tenantdb).
	TablePrefix string
	// CredentialsFile and Profile, if set, name the shared credentials
	// file and the profile in it that the AWS chain reads (as
	// AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE would); tests use them
	// to give each gateway its own engine credential without touching the
	// process's environment.
	CredentialsFile, Profile string
}

// open connects the remote backend. In stage 1 the node still opens its
// local store for credentials, tenants, audit and quotas; only items and
// table definitions live in the engine (internal/remote/DESIGN.md).
func (r Remote) open(ctx context.Context, o Options, log *slog.Logger) (*remote.Backend, error) {
	var lo []func(*config.LoadOptions) error
	if r.Region != "" {
		lo = append(lo, config.WithRegion(r.Region))
	}
	if r.CredentialsFile != "" {
		lo = append(lo, config.WithSharedCredentialsFiles([]string{r.CredentialsFile}))
	}
	if r.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(r.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = o.Region
	}
	client := dynamodb.NewFromConfig(cfg, func(co *dynamodb.Options) {
		if r.Endpoint != "" {
			co.BaseEndpoint = aws.String(r.Endpoint)
		}
	})
	return remote.Open(ctx, remote.Options{
		Client:      client,
		TablePrefix: r.TablePrefix,
		Region:      o.Region,
		Endpoint:    o.Endpoint,
		Logger:      log.With("component", "remote"),
	})
}
