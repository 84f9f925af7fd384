"""Create ``[s3] bucket`` when it is missing (compose.yaml's one-shot ``bucket`` service).

The service never creates its bucket (a missing one is a service condition, ADR 33);
compose's S3 server starts empty, so this makes it once. It reads the same
``TRANSCRIBER_S3_*`` variables the service does and waits up to ``--wait`` seconds
for the server to answer. Exit 0 when the bucket exists; 1 with the reason (never a
key or a URL) when it cannot be made.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

#: Errors S3 servers answer to a CreateBucket of a bucket that already exists.
_EXISTS = {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}


def main() -> int:
    """Make the bucket, waiting for the server; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for the server")
    wait = parser.parse_args().wait
    env = os.environ
    bucket = env.get("TRANSCRIBER_S3_BUCKET", "")
    if not bucket:
        print("make_bucket: TRANSCRIBER_S3_BUCKET is not set", file=sys.stderr)  # noqa: T201
        return 1
    path_style = env.get("TRANSCRIBER_S3_PATH_STYLE", "").strip().lower() in {"true", "1", "yes"}
    client = botocore.session.get_session().create_client(
        "s3",
        endpoint_url=env.get("TRANSCRIBER_S3_ENDPOINT_URL"),
        region_name=env.get("TRANSCRIBER_S3_REGION", "us-east-1"),
        aws_access_key_id=env.get("TRANSCRIBER_S3_ACCESS_KEY_ID"),
        aws_secret_access_key=env.get("TRANSCRIBER_S3_SECRET_ACCESS_KEY"),
        config=Config(
            s3={"addressing_style": "path" if path_style else "auto"},
            retries={"max_attempts": 1},
            connect_timeout=5,
            read_timeout=10,
        ),
    )
    deadline = time.monotonic() + wait
    while True:
        try:
            client.create_bucket(Bucket=bucket)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _EXISTS:
                break
            problem = f"the server refused CreateBucket ({code or 'no code'})"
        except BotoCoreError as exc:
            problem = f"the server does not answer ({type(exc).__name__})"
        else:
            break
        if time.monotonic() >= deadline:
            print(f"make_bucket: {problem} after {wait:.0f} s", file=sys.stderr)  # noqa: T201
            return 1
        time.sleep(1)
    print("make_bucket: the bucket is there")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
