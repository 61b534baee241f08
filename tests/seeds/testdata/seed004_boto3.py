"""Seed 004's access patterns through boto3, as an application would run them.

Run by boto3_test.go with a tenant key in a credentials profile
(AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE):

    seed004_boto3.py --endpoint URL --profile NAME --prefix TENANT#1 \
        [--leading-keys] [--other-prefix TENANT#<other>]

It writes the data set of seed004_data.json (TENANT#1 replaced by --prefix)
with the tenant's key, then runs the seed's queries, the atomic two-ticket
transaction (and a failing variant) and the aggregate query (before the
transaction, and after the application brought the counts up to date),
comparing every result with the data set: the same results the AWS CLI
test expects.
With --leading-keys the seed's transaction, whose new GSI1 key starts with a
space, must be refused and the corrected one succeed; --other-prefix checks
that another tenant's prefix is refused. Prints OK, or the failures.
"""

import argparse
import json
import os
import sys

import boto3
from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

TABLE = "SupportTicket"
failures = []


def fail(msg):
    failures.append(msg)


def load(prefix):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seed004_data.json")
    with open(path) as f:
        text = f.read().replace("TENANT#1", prefix)
    return json.loads(text)


def key_of(item):
    return (item["pk"]["S"], item["sk"]["S"])


def canonical(items, gsi):
    """Items with equal GSI1 keys in table-key order (DynamoDB leaves it open)."""
    if not gsi:
        return items
    resolvers = [it["resolver"]["S"] for it in items]
    if resolvers != sorted(resolvers):
        fail("items not in resolver order: %s" % resolvers)
    return sorted(items, key=lambda it: (it["resolver"]["S"], key_of(it)))


def check(what, got, want_keys, model, gsi=False):
    got = canonical(got, gsi)
    keys = [list(key_of(it)) for it in got]
    if keys != [list(k) for k in want_keys]:
        fail("%s: got keys %s, want %s" % (what, keys, want_keys))
        return
    for it in got:
        if it != model[key_of(it)]:
            fail("%s: item %s, want %s" % (what, it, model[key_of(it)]))


def check_capacity(what, cc, units, at_least=False):
    if isinstance(cc, list):
        cc = cc[0] if len(cc) == 1 else None
    if not cc or cc.get("TableName") != TABLE:
        fail("%s: ConsumedCapacity %s" % (what, cc))
        return
    got = cc.get("CapacityUnits", 0)
    if got < units or (not at_least and got != units):
        fail("%s: CapacityUnits %s, want %s%s" % (what, got, "at least " if at_least else "", units))


def error_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--leading-keys", action="store_true")
    ap.add_argument("--other-prefix")
    args = ap.parse_args()
    prefix = args.prefix

    session = boto3.Session(profile_name=args.profile)
    ddb = session.client("dynamodb", endpoint_url=args.endpoint)
    table = session.resource("dynamodb", endpoint_url=args.endpoint).Table(TABLE)
    data = load(prefix)
    ex = data["expect"]
    model = {key_of(it): it for it in data["items"]}

    # Another tenant's prefix is refused, for reads and index queries alike.
    if args.other_prefix:
        o = args.other_prefix
        for what, call in [
            ("query", lambda: ddb.query(TableName=TABLE, KeyConditionExpression="pk = :v1",
                                        ExpressionAttributeValues={":v1": {"S": o + "|TICKET#1"}})),
            ("GSI1 query", lambda: ddb.query(TableName=TABLE, IndexName="GSI1",
                                             KeyConditionExpression="tenant_status = :v1",
                                             ExpressionAttributeValues={":v1": {"S": o + "|OPEN"}})),
            ("get_item", lambda: table.get_item(Key={"pk": o + "|TICKET#1", "sk": "SUMMARY"})),
        ]:
            code, _ = error_code(call)
            if code != "AccessDeniedException":
                fail("%s with the other tenant's prefix: %s, want AccessDeniedException" % (what, code))

    # The data set, written with the tenant's key.
    reqs = [{"PutRequest": {"Item": it}} for it in data["items"]]
    for i in range(0, len(reqs), 25):
        out = ddb.batch_write_item(RequestItems={TABLE: reqs[i:i + 25]})
        if out.get("UnprocessedItems"):
            fail("batch_write_item left %s" % out["UnprocessedItems"])

    def q(**kw):
        out = ddb.query(TableName=TABLE, ReturnConsumedCapacity="TOTAL", **kw)
        return out["Items"], out.get("ConsumedCapacity")

    def open_tickets(status):
        return ddb.query(TableName=TABLE, IndexName="GSI1", KeyConditionExpression="tenant_status = :v1",
                         ExpressionAttributeValues={":v1": {"S": status}})["Items"]

    # "get a single ticket and all comments"
    its, cc = q(KeyConditionExpression="pk = :v1", ExpressionAttributeValues={":v1": {"S": prefix + "|TICKET#1"}})
    check("ticket", its, ex["ticket"], model)
    check_capacity("ticket", cc, 0.5)
    # "view a single ticket summary"
    its, cc = q(KeyConditionExpression="pk = :v1 and sk = :v2",
                ExpressionAttributeValues={":v1": {"S": prefix + "|TICKET#1"}, ":v2": {"S": "SUMMARY"}})
    check("summary", its, ex["summary"], model)
    check_capacity("summary", cc, 0.5)
    # "get all open tickets"
    its, cc = q(IndexName="GSI1", KeyConditionExpression="tenant_status = :v1",
                ExpressionAttributeValues={":v1": {"S": prefix + "|OPEN"}})
    check("open", its, ex["open"], model, gsi=True)
    check_capacity("open", cc, 0.5)
    # "view all open tickets for a given resolver"
    its, cc = q(IndexName="GSI1", KeyConditionExpression="tenant_status = :v1 AND resolver = :v2",
                ExpressionAttributeValues={":v1": {"S": prefix + "|OPEN"}, ":v2": {"S": "johnd"}})
    check("open-resolver", its, ex["open-resolver"], model, gsi=True)
    check_capacity("open-resolver", cc, 0.5)
    # The same with the resource API and Python types.
    out = table.query(IndexName="GSI1", KeyConditionExpression=Key("tenant_status").eq(prefix + "|OPEN") & Key("resolver").eq("johnd"))
    des = TypeDeserializer()
    want = [{k: des.deserialize(v) for k, v in model[tuple(k)].items()} for k in ex["open-resolver"]]
    if sorted(out["Items"], key=lambda it: it["pk"]) != want:
        fail("resource query: %s, want %s" % (out["Items"], want))

    def status_counts():
        n = {}
        for (pk, sk), it in model.items():
            if sk == "SUMMARY":
                st = it["tenant_status"]["S"].rsplit("|", 1)[-1]
                n[st] = n.get(st, 0) + 1
        return n

    def check_aggregates(what):
        # The seed's aggregate query returns the model's aggregates, and
        # these count the model's tickets: stale counts are never accepted.
        counts = status_counts()
        for st in ("CLOSED", "OPEN"):
            have = model[(prefix + "|AGGREGATE", "STATUS#" + st)]["count"]["N"]
            if have != str(counts.get(st, 0)):
                fail("%s: the model's aggregate %s is %s, but it has %d such tickets" % (what, st, have, counts.get(st, 0)))
        its, cc = q(KeyConditionExpression="pk = :v1", ExpressionAttributeValues={":v1": {"S": prefix + "|AGGREGATE"}})
        check(what, its, ex["aggregate"], model)
        check_capacity(what, cc, 0.5)

    # "view an aggregate of the tickets by status", before any change.
    check_aggregates("aggregate before the transaction")

    # "change the status of multiple tickets atomically"
    closed = data["closed_status"]  # " TENANT#...|CLOSED", as the seed prints it
    closed_keys = ex["closed-after-transact"]

    def transact(status, second="TICKET#2", condition=None):
        def update(ticket):
            u = {"TableName": TABLE, "Key": {"pk": {"S": prefix + "|" + ticket}, "sk": {"S": "SUMMARY"}},
                 "UpdateExpression": "SET tenant_status = :ts", "ExpressionAttributeValues": {":ts": {"S": status}}}
            if condition:
                u["ConditionExpression"] = condition
            return {"Update": u}
        return ddb.transact_write_items(TransactItems=[update("TICKET#1"), update(second)], ReturnConsumedCapacity="TOTAL")

    if args.leading_keys:
        code, _ = error_code(lambda: transact(closed))
        if code != "AccessDeniedException":
            fail("seed transaction with GSI1 key %r on a leading-keys table: %s, want AccessDeniedException" % (closed, code))
        check("open after the refused transaction", open_tickets(prefix + "|OPEN"), ex["open"], model, gsi=True)
        closed = closed.strip()
        closed_keys = ex["closed-after-corrected-transact"]
    code, resp = error_code(lambda: transact(closed, second="TICKET#9", condition="attribute_exists(pk)"))
    reasons = [r["Code"] for r in (resp or {}).get("CancellationReasons", [])]
    if code != "TransactionCanceledException" or reasons != ["None", "ConditionalCheckFailed"]:
        fail("failing transaction: %s %s, want TransactionCanceledException [None, ConditionalCheckFailed]" % (code, reasons))
    check("open after the failed transaction", open_tickets(prefix + "|OPEN"), ex["open"], model, gsi=True)
    if "Item" in ddb.get_item(TableName=TABLE, Key={"pk": {"S": prefix + "|TICKET#9"}, "sk": {"S": "SUMMARY"}}):
        fail("the failed transaction created ticket 9")
    out = transact(closed)
    check_capacity("transact", out.get("ConsumedCapacity"), 4, at_least=True)
    for n in ("1", "2"):
        model[(prefix + "|TICKET#" + n, "SUMMARY")]["tenant_status"] = {"S": closed}
    check("open after the transaction", open_tickets(prefix + "|OPEN"), ex["open-after-transact"], model, gsi=True)
    check("closed after the transaction", open_tickets(closed), closed_keys, model, gsi=True)

    # The seed keeps the aggregates from the table's stream (a Lambda
    # function). tenantdb has no streams yet, so the application adds the
    # transaction's changes to the counts itself; the seed's query then
    # shows counts of the tickets as they now are.
    for st, n in status_counts().items():
        agg = model[(prefix + "|AGGREGATE", "STATUS#" + st)]
        delta = n - int(agg["count"]["N"])
        if delta:
            table.update_item(Key={"pk": prefix + "|AGGREGATE", "sk": "STATUS#" + st},
                              UpdateExpression="ADD #c :d", ExpressionAttributeNames={"#c": "count"},
                              ExpressionAttributeValues={":d": delta})
            agg["count"] = {"N": str(n)}
    check_aggregates("aggregate after the transaction")

    # The tenant's whole view is its own data.
    scanned = []
    for page in ddb.get_paginator("scan").paginate(TableName=TABLE):
        scanned.extend(page["Items"])
    if sorted(scanned, key=key_of) != sorted(model.values(), key=key_of):
        fail("scan: %d items %s, want the tenant's %d" % (len(scanned), sorted(key_of(i) for i in scanned), len(model)))

    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
