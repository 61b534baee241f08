"""Enable streams with boto3, write with every write operation, and read
every record back with the dynamodbstreams client, following shards from
TRIM_HORIZON, for every view type; then disable a stream and read it to
its end. Prints OK."""
import boto3

ddb = boto3.client("dynamodb")
streams = boto3.client("dynamodbstreams")

VIEWS = ["NEW_AND_OLD_IMAGES", "NEW_IMAGE", "OLD_IMAGE", "KEYS_ONLY"]
FULL = [("INSERT", "a", None, "1"), ("MODIFY", "a", "1", "2"), ("MODIFY", "a", "2", "3"),
        ("REMOVE", "a", "3", None), ("INSERT", "b", None, "1"), ("INSERT", "t", None, "1"),
        ("MODIFY", "b", "1", "2")]


def table(view):
    return "boto3_streams_" + view.lower()


arns = {}
for view in VIEWS:
    d = ddb.create_table(
        TableName=table(view),
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": view},
    )["TableDescription"]
    arns[view] = d["LatestStreamArn"]

for view in VIEWS:
    t = table(view)
    ddb.put_item(TableName=t, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    ddb.update_item(TableName=t, Key={"pk": {"S": "a"}},
                    UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}})
    ddb.put_item(TableName=t, Item={"pk": {"S": "a"}, "n": {"N": "3"}})
    ddb.delete_item(TableName=t, Key={"pk": {"S": "a"}})
    ddb.delete_item(TableName=t, Key={"pk": {"S": "none"}})  # no record
# One BatchWriteItem and one TransactWriteItems over the four tables.
ddb.batch_write_item(RequestItems={
    table(v): [{"PutRequest": {"Item": {"pk": {"S": "b"}, "n": {"N": "1"}}}}] for v in VIEWS})
items = []
for v in VIEWS:
    items.append({"Put": {"TableName": table(v), "Item": {"pk": {"S": "t"}, "n": {"N": "1"}}}})
    items.append({"Update": {"TableName": table(v), "Key": {"pk": {"S": "b"}},
                             "UpdateExpression": "SET n = :two", "ExpressionAttributeValues": {":two": {"N": "2"}}}})
ddb.transact_write_items(TransactItems=items)


def read(arn, view):
    desc = streams.describe_stream(StreamArn=arn)["StreamDescription"]
    assert desc["StreamViewType"] == view, desc
    got = []
    for shard in desc["Shards"]:
        it = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                        ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while it:
            page = streams.get_records(ShardIterator=it, Limit=2)
            for r in page["Records"]:
                db = r["dynamodb"]
                got.append((r["eventName"], db["Keys"]["pk"]["S"],
                            db.get("OldImage", {}).get("n", {}).get("N"),
                            db.get("NewImage", {}).get("n", {}).get("N")))
                assert r["eventSource"] == "aws:dynamodb" and db["SizeBytes"] > 0, r
                assert db["StreamViewType"] == view, r
            it = page.get("NextShardIterator")
            if not page["Records"] and desc["StreamStatus"] == "ENABLED":
                break  # an open shard, read to its end
    return desc["StreamStatus"], got


for view in VIEWS:
    want = [(e, k, o if "OLD" in view else None, n if view in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES") else None)
            for e, k, o, n in FULL]
    assert [s["StreamArn"] for s in streams.list_streams(TableName=table(view))["Streams"]] == [arns[view]]
    status, got = read(arns[view], view)
    assert status == "ENABLED" and got == want, (view, status, got)

# Disabled: DISABLED, and its shard reads to its end (no NextShardIterator).
ddb.update_table(TableName=table("KEYS_ONLY"), StreamSpecification={"StreamEnabled": False})
status, got = read(arns["KEYS_ONLY"], "KEYS_ONLY")
assert status == "DISABLED" and len(got) == len(FULL), (status, got)
print("OK")
