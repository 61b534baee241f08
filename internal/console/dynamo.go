package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// dynamoHost is the host the console's DynamoDB requests name (and sign);
// they never leave the process.
const dynamoHost = "console.tenantdb.internal"

// dynamoClient calls the DynamoDB API in-process with a session's key,
// signed with SigV4 exactly as an SDK signs, and keeps items in DynamoDB
// JSON (json.RawMessage) so that the browser shows them as they are.
type dynamoClient struct {
	h      http.Handler
	region string
	creds  aws.Credentials
	signer *v4.Signer
}

// dynamoError is an error answered by the DynamoDB API.
type dynamoError struct {
	Status  int
	Type    string
	Message string
}

func (e *dynamoError) Error() string { return e.Type + ": " + e.Message }

// call runs op (e.g. "Scan", or a full target such as
// "DynamoDBStreams_20120810.ListStreams") with in as the request and decodes the
// answer into out.
func (d *dynamoClient) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+dynamoHost+"/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	target := "DynamoDB_20120810." + op
	if strings.Contains(op, ".") {
		target = op // another API's target, e.g. DynamoDB Streams'
	}
	req.Header.Set("X-Amz-Target", target)
	sum := sha256.Sum256(body)
	if err := d.signer.SignHTTP(ctx, d.creds, req, hex.EncodeToString(sum[:]), "dynamodb", d.region, time.Now()); err != nil {
		return err
	}
	resp, err := inProc{d.h}.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Type     string `json:"__type"`
			Message  string `json:"message"`
			Message2 string `json:"Message"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Message == "" {
			e.Message = e.Message2
		}
		if i := strings.LastIndexByte(e.Type, '#'); i >= 0 {
			e.Type = e.Type[i+1:]
		}
		return &dynamoError{Status: resp.StatusCode, Type: e.Type, Message: e.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("console: malformed DynamoDB answer: %w", err)
	}
	return nil
}

// item is one item in DynamoDB JSON: attribute name to typed value.
type item = map[string]json.RawMessage

type keyElement struct {
	AttributeName string `json:"AttributeName"`
	KeyType       string `json:"KeyType"`
}

type attrDef struct {
	AttributeName string `json:"AttributeName"`
	AttributeType string `json:"AttributeType"`
}

type tableDesc struct {
	TableName              string       `json:"TableName"`
	TableStatus            string       `json:"TableStatus"`
	ItemCount              int64        `json:"ItemCount"`
	TableSizeBytes         int64        `json:"TableSizeBytes"`
	KeySchema              []keyElement `json:"KeySchema"`
	AttributeDefinitions   []attrDef    `json:"AttributeDefinitions"`
	GlobalSecondaryIndexes []struct {
		IndexName string       `json:"IndexName"`
		KeySchema []keyElement `json:"KeySchema"`
	} `json:"GlobalSecondaryIndexes"`
	LocalSecondaryIndexes []struct {
		IndexName string       `json:"IndexName"`
		KeySchema []keyElement `json:"KeySchema"`
	} `json:"LocalSecondaryIndexes"`
}

// keyName returns the name of the key attribute of type kt (HASH, RANGE).
func (t tableDesc) KeyName(kt string) string {
	for _, k := range t.KeySchema {
		if k.KeyType == kt {
			return k.AttributeName
		}
	}
	return ""
}

// attrType returns the declared type (S, N, B) of attribute name.
func (t tableDesc) AttrType(name string) string {
	for _, a := range t.AttributeDefinitions {
		if a.AttributeName == name {
			return a.AttributeType
		}
	}
	return "S"
}

// keyOf returns the primary key of it, in DynamoDB JSON.
func (t tableDesc) keyOf(it item) item {
	k := item{}
	for _, e := range t.KeySchema {
		if v, ok := it[e.AttributeName]; ok {
			k[e.AttributeName] = v
		}
	}
	return k
}

func (d *dynamoClient) listTables(ctx context.Context) ([]string, error) {
	var names []string
	var start string
	for {
		in := map[string]any{"Limit": 100}
		if start != "" {
			in["ExclusiveStartTableName"] = start
		}
		var out struct {
			TableNames             []string `json:"TableNames"`
			LastEvaluatedTableName string   `json:"LastEvaluatedTableName"`
		}
		if err := d.call(ctx, "ListTables", in, &out); err != nil {
			return nil, err
		}
		names = append(names, out.TableNames...)
		if out.LastEvaluatedTableName == "" || len(names) >= 1000 {
			return names, nil
		}
		start = out.LastEvaluatedTableName
	}
}

func (d *dynamoClient) describe(ctx context.Context, table string) (tableDesc, error) {
	var out struct {
		Table tableDesc `json:"Table"`
	}
	err := d.call(ctx, "DescribeTable", map[string]any{"TableName": table}, &out)
	return out.Table, err
}

// itemPage is a page of items and the key to continue after, if any.
type itemPage struct {
	Items            []item          `json:"Items"`
	LastEvaluatedKey json.RawMessage `json:"LastEvaluatedKey"`
}
