#!/usr/bin/env python3
"""Write crates/registry/testdata/sigv4/vectors.json: requests signed by
botocore's own Signature Version 4 signer (the AWS SDK for Python), at a
fixed time, with every intermediate string, for the hand-written signer of
crates/registry/src/cloud/sigv4.rs to be checked against.

Run with a Python that has botocore (the test bed's moto venv has it):

    /path/to/venv/bin/python scripts/sigv4-vectors.py > crates/registry/testdata/sigv4/vectors.json
"""
import datetime
import json
import sys

import botocore
import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AMZ_DATE = "20240229T235959Z"
FIXED = datetime.datetime(2024, 2, 29, 23, 59, 59)
# Every signature is made at AMZ_DATE.
botocore.auth.get_current_datetime = lambda *a, **k: FIXED

KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLE//////////wEaDExampleSessionToken+/="

ECR_TARGET = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"
PUBLIC_TARGET = "SpencerFrontendService.GetAuthorizationToken"
JSON_11 = "application/x-amz-json-1.1"


def vector(name, method, url, region, service, headers=(), body="", query=(), token=None):
    creds = Credentials(KEY_ID, SECRET, token)
    auth = botocore.auth.SigV4Auth(creds, service, region)
    request = AWSRequest(method=method, url=url, data=body.encode(), headers=dict(headers))
    if query:
        request.params = dict(query)
    auth.add_auth(request)
    authorization = request.headers["Authorization"]
    # The intermediate strings, as add_auth made them (before it added the
    # Authorization header itself).
    del request.headers["Authorization"]
    canonical = auth.canonical_request(request)
    return {
        "name": name,
        "botocore": botocore.__version__,
        "method": method,
        "path": botocore.compat.urlsplit(url).path or "/",
        "query": [list(q) for q in query],
        "headers": [list(h) for h in headers],
        "body": body,
        "host": botocore.auth._host_from_url(url),
        "region": region,
        "service": service,
        "amz_date": request.headers["X-Amz-Date"],
        "access_key_id": KEY_ID,
        "secret_access_key": SECRET,
        "session_token": token,
        "canonical_request": canonical,
        "string_to_sign": auth.string_to_sign(request, canonical),
        "authorization": authorization,
    }


def ecr(name, url, region, token=None, service="ecr", target=ECR_TARGET):
    return vector(
        name, "POST", url, region, service,
        headers=[("Content-Type", JSON_11), ("X-Amz-Target", target)],
        body="{}", token=token,
    )


vectors = [
    ecr("ecr us-east-1", "https://api.ecr.us-east-1.amazonaws.com/", "us-east-1"),
    ecr("ecr eu-west-1 with a session token", "https://api.ecr.eu-west-1.amazonaws.com/", "eu-west-1", TOKEN),
    ecr("ecr China", "https://api.ecr.cn-north-1.amazonaws.com.cn/", "cn-north-1", TOKEN),
    ecr("ecr GovCloud FIPS", "https://ecr-fips.us-gov-west-1.amazonaws.com/", "us-gov-west-1"),
    ecr("ecr ISO", "https://api.ecr.us-iso-east-1.c2s.ic.gov/", "us-iso-east-1", TOKEN),
    ecr("ecr-public", "https://api.ecr-public.us-east-1.amazonaws.com/", "us-east-1", TOKEN,
        service="ecr-public", target=PUBLIC_TARGET),
    ecr("ecr at a loopback endpoint with a port", "http://127.0.0.1:5000/", "ap-southeast-2", TOKEN),
    ecr("ecr at a default port", "https://api.ecr.us-west-2.amazonaws.com:443/", "us-west-2"),
    vector(
        "a GET with a query and spaced headers", "GET",
        "https://example.amazonaws.com/a/b-c_d.e~f", "us-east-1", "service",
        headers=[("X-Amz-Meta-Test", "  one   two  "), ("My-Header", "value")],
        query=[("b", "two words"), ("a", "x/y=z&w"), ("Ünï", "çødé"), ("empty", "")],
    ),
    vector(
        "an STS form POST", "POST", "https://sts.us-east-1.amazonaws.com/", "us-east-1", "sts",
        headers=[("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")],
        body="Action=GetCallerIdentity&Version=2011-06-15", token=TOKEN,
    ),
]
json.dump(vectors, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
