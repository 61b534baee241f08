package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// EnsureTable checks that table exists and is ACTIVE. When it is missing and
// create is set, it creates it (pk S hash, sk S range, on-demand billing) and
// waits up to a minute for it to become ACTIVE.
func EnsureTable(ctx context.Context, c *dynamodb.Client, table string, create bool) error {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil:
		if out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
	case errors.As(err, &nf) && create:
		_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName: &table,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
			},
			BillingMode: types.BillingModePayPerRequest,
		})
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("loadgen: create table %s: %w", table, err)
		}
	case errors.As(err, &nf):
		return fmt.Errorf("loadgen: table %s does not exist (use --create-table): %w", table, err)
	default:
		return fmt.Errorf("loadgen: describe table %s: %w", table, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		if err == nil && out.Table != nil && out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("status %s", out.Table.TableStatus)
			}
			return fmt.Errorf("loadgen: table %s not ACTIVE after a minute: %w", table, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Preload writes items 0..n-1 (n/20 collections of 20 items of itemSize
// bytes) through each client, with BatchWriteItem and the given
// concurrency. Under tenantdb's namespace isolation every tenant has its own
// copy. Throttles and unprocessed items are retried with backoff.
func Preload(ctx context.Context, clients []*dynamodb.Client, table string, n, itemSize, concurrency int) error {
	if n <= 0 {
		return nil
	}
	it := newItems(itemSize)
	type job struct {
		c    *dynamodb.Client
		from int
	}
	jobs := make(chan job)
	errc := make(chan error, concurrency)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 0; i < max(concurrency, 1); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var reqs []types.WriteRequest
				for k := j.from; k < min(j.from+25, n); k++ {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it.item(k)}})
				}
				if err := batchWriteAll(ctx, j.c, table, reqs); err != nil {
					errc <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for _, c := range clients {
		for from := 0; from < n; from += 25 {
			select {
			case jobs <- job{c, from}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}

func batchWriteAll(ctx context.Context, c *dynamodb.Client, table string, reqs []types.WriteRequest) error {
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{table: reqs},
		})
		if err == nil {
			reqs = out.UnprocessedItems[table]
			if len(reqs) == 0 {
				return nil
			}
		} else if !IsThrottle(ErrorCode(err)) {
			return fmt.Errorf("loadgen: preload: %w", err)
		}
		if attempt == 20 {
			return fmt.Errorf("loadgen: preload: gave up after %d attempts (last error: %v)", attempt+1, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
