"""boto3 against tenantdb: the endpoint and credentials come from the
environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...). Prints OK on
success; any failure raises."""
import os
from decimal import Decimal

import boto3
from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

endpoint = os.environ["AWS_ENDPOINT_URL"]
client = boto3.client("dynamodb", endpoint_url=endpoint)
ddb = boto3.resource("dynamodb", endpoint_url=endpoint)

table = ddb.create_table(
    TableName="Boto3Table",
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
    BillingMode="PAY_PER_REQUEST",
)
table.wait_until_exists()
assert "Boto3Table" in client.list_tables()["TableNames"]

with table.batch_writer() as batch:
    for i in range(30):
        batch.put_item(Item={"pk": "user#1", "sk": i, "price": Decimal("19.99") * i, "tags": {"a", "b"}, "blob": b"\x00\x01"})

item = table.get_item(Key={"pk": "user#1", "sk": 3}, ConsistentRead=True)["Item"]
assert item["price"] == Decimal("59.97"), item
assert item["tags"] == {"a", "b"}, item
assert bytes(item["blob"].value) == b"\x00\x01", item

resp = table.query(KeyConditionExpression=Key("pk").eq("user#1") & Key("sk").between(10, 19), ScanIndexForward=False, Limit=4)
assert [int(i["sk"]) for i in resp["Items"]] == [19, 18, 17, 16], resp["Items"]
assert "LastEvaluatedKey" in resp

total = 0
kwargs = {}
while True:
    page = table.scan(**kwargs)
    total += len(page["Items"])
    if "LastEvaluatedKey" not in page:
        break
    kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
assert total == 30, total

table.update_item(Key={"pk": "user#1", "sk": 0}, UpdateExpression="ADD visits :one", ExpressionAttributeValues={":one": 1})
out = table.update_item(Key={"pk": "user#1", "sk": 0}, UpdateExpression="ADD visits :one",
                        ExpressionAttributeValues={":one": 1}, ReturnValues="UPDATED_NEW")
assert out["Attributes"]["visits"] == 2, out

try:
    table.put_item(Item={"pk": "user#1", "sk": 0}, ConditionExpression="attribute_not_exists(pk)")
    raise AssertionError("conditional put succeeded")
except ClientError as e:
    assert e.response["Error"]["Code"] == "ConditionalCheckFailedException", e.response

try:
    client.transact_write_items(TransactItems=[
        {"ConditionCheck": {"TableName": "Boto3Table", "Key": {"pk": {"S": "user#1"}, "sk": {"N": "1"}},
                            "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Put": {"TableName": "Boto3Table", "Item": {"pk": {"S": "user#2"}, "sk": {"N": "1"}}}},
    ])
    raise AssertionError("transaction succeeded")
except client.exceptions.TransactionCanceledException as e:
    codes = [r["Code"] for r in e.response["CancellationReasons"]]
    assert codes == ["ConditionalCheckFailed", "None"], codes

try:
    client.describe_table(TableName="NoSuchTable")
    raise AssertionError("describe_table of a missing table succeeded")
except client.exceptions.ResourceNotFoundException:
    pass

# PartiQL: execute_statement (paged), DuplicateItemException,
# batch_execute_statement, execute_transaction.
for i in range(5):
    client.execute_statement(Statement='INSERT INTO "Boto3Table" VALUE {\'pk\': ?, \'sk\': ?, \'n\': ?}',
                             Parameters=[{"S": "pq#1"}, {"N": str(i)}, {"N": str(i * 10)}])
try:
    client.execute_statement(Statement="INSERT INTO Boto3Table VALUE {'pk': 'pq#1', 'sk': 0}")
    raise AssertionError("a duplicate INSERT succeeded")
except client.exceptions.DuplicateItemException:
    pass
got, kwargs = [], {}
while True:
    r = client.execute_statement(Statement="SELECT sk FROM Boto3Table WHERE pk = 'pq#1' ORDER BY sk DESC", Limit=2, **kwargs)
    got += [int(it["sk"]["N"]) for it in r["Items"]]
    if "NextToken" not in r:
        break
    kwargs = {"NextToken": r["NextToken"]}
assert got == [4, 3, 2, 1, 0], got
r = client.batch_execute_statement(Statements=[
    {"Statement": "UPDATE Boto3Table SET n = n + 1 WHERE pk = 'pq#1' AND sk = 0"},
    {"Statement": "INSERT INTO Boto3Table VALUE {'pk': 'pq#1', 'sk': 1}"},
])
assert "Error" not in r["Responses"][0] and r["Responses"][1]["Error"]["Code"] == "DuplicateItem", r["Responses"]
r = client.execute_transaction(TransactStatements=[
    {"Statement": "SELECT n FROM Boto3Table WHERE pk = 'pq#1' AND sk = 0"},
    {"Statement": "SELECT n FROM Boto3Table WHERE pk = 'pq#1' AND sk = 4"},
])
assert [it["Item"]["n"]["N"] for it in r["Responses"]] == ["1", "40"], r["Responses"]

table.delete()
print("OK")
