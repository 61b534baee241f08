"""Enable a stream with boto3, write, and read every record back with the
dynamodbstreams client, following shards from TRIM_HORIZON. Prints OK."""
import boto3

ddb = boto3.client("dynamodb")
streams = boto3.client("dynamodbstreams")

d = ddb.create_table(
    TableName="boto3_streams",
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    BillingMode="PAY_PER_REQUEST",
    StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
)["TableDescription"]
arn = d["LatestStreamArn"]

ddb.put_item(TableName="boto3_streams", Item={"pk": {"S": "a"}, "n": {"N": "1"}})
ddb.update_item(TableName="boto3_streams", Key={"pk": {"S": "a"}},
                UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}})
ddb.delete_item(TableName="boto3_streams", Key={"pk": {"S": "a"}})

assert [s["StreamArn"] for s in streams.list_streams(TableName="boto3_streams")["Streams"]] == [arn]
desc = streams.describe_stream(StreamArn=arn)["StreamDescription"]
assert desc["StreamStatus"] == "ENABLED" and desc["StreamViewType"] == "NEW_AND_OLD_IMAGES", desc

got = []
for shard in desc["Shards"]:
    it = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                    ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    while it:
        page = streams.get_records(ShardIterator=it, Limit=1)
        if not page["Records"]:
            break
        for r in page["Records"]:
            db = r["dynamodb"]
            got.append((r["eventName"],
                        db.get("OldImage", {}).get("n", {}).get("N"),
                        db.get("NewImage", {}).get("n", {}).get("N")))
            assert r["eventSource"] == "aws:dynamodb" and db["SizeBytes"] > 0, r
        it = page.get("NextShardIterator")

assert got == [("INSERT", None, "1"), ("MODIFY", "1", "2"), ("REMOVE", "2", None)], got
print("OK")
