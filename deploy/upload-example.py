"""Put a bundled example into S3-compatible storage, for ``eceb-dist submit``.

Creates the buckets ``eceb-inputs`` and ``eceb-reports`` when they are
missing, then uploads every file of the example directory (default:
``examples/enterprise-seed`` beside this script) to
``s3://eceb-inputs/<directory name>/`` under its relative path, so that the
example's benchmark, run, registry and corpus are at
``s3://eceb-inputs/enterprise-seed/benchmark.json``, ``.../run.json``,
``.../registry.jsonl`` and ``.../corpus``.

The endpoint is ``--endpoint-url`` or ``ECEB_S3_ENDPOINT_URL`` (as for
``eceb``); credentials come only from boto3's default chain (environment
variables, ``~/.aws/``, instance roles) and are never printed. A server that
is still starting is waited for, up to ``--wait`` seconds.

    python deploy/upload-example.py [EXAMPLE_DIR] [--endpoint-url URL] [--wait S]

Exit status: 0 uploaded; 1 the storage refused or could not be reached
(the message says which request and why); 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.exceptions

INPUTS_BUCKET = "eceb-inputs"
REPORTS_BUCKET = "eceb-reports"
DEFAULT_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "enterprise-seed"
POLL_S = 0.2


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line: ``example`` (a directory), ``endpoint_url`` (str or None), ``wait`` (seconds, int)."""
    parser = argparse.ArgumentParser(
        prog="upload-example.py", description=__doc__.split("\n\n", 1)[0] if __doc__ else None
    )
    parser.add_argument("example", nargs="?", type=Path, default=DEFAULT_EXAMPLE, help="example directory")
    parser.add_argument(
        "--endpoint-url",
        default=os.environ.get("ECEB_S3_ENDPOINT_URL") or None,
        help="S3-compatible endpoint (env: ECEB_S3_ENDPOINT_URL; default: AWS S3)",
    )
    parser.add_argument("--wait", type=int, default=30, help="seconds to wait for the endpoint to answer (default 30)")
    args = parser.parse_args(argv)
    if not args.example.is_dir():
        parser.error(f"{args.example} is not a directory")
    return args


def client(endpoint_url: str | None) -> Any:
    """A boto3 S3 client for ``endpoint_url`` (path-style addressing, which MinIO and Ceph expect)."""
    config = botocore.config.Config(s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 3})
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)


def wait_until_answering(s3: Any, seconds: int) -> None:
    """Return once the endpoint answers a request; re-raise its connection error after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            s3.list_buckets()
        except (botocore.exceptions.EndpointConnectionError, botocore.exceptions.ConnectionClosedError):
            if time.monotonic() >= deadline:
                raise
            time.sleep(POLL_S)
        else:
            return


def ensure_bucket(s3: Any, name: str) -> None:
    """Create bucket ``name`` unless it exists (in the client's region)."""
    try:
        s3.head_bucket(Bucket=name)
    except botocore.exceptions.ClientError as error:
        if error.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
    else:
        return
    region = s3.meta.region_name
    if region in (None, "us-east-1"):
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})


def upload(s3: Any, example: Path) -> int:
    """Upload every file under ``example`` to ``s3://eceb-inputs/<example name>/``; the number of files."""
    files = sorted(path for path in example.rglob("*") if path.is_file())
    for path in files:
        s3.upload_file(str(path), INPUTS_BUCKET, f"{example.name}/{path.relative_to(example).as_posix()}")
    return len(files)


def main(argv: list[str]) -> int:
    """Run the command line ``argv`` (without the program name); the exit status."""
    args = parse_args(argv)
    s3 = client(args.endpoint_url)
    try:
        wait_until_answering(s3, args.wait)
        for bucket in (INPUTS_BUCKET, REPORTS_BUCKET):
            ensure_bucket(s3, bucket)
        count = upload(s3, args.example)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        print(f"upload-example: {error}", file=sys.stderr)
        return 1
    print(f"uploaded {count} files of {args.example.name} to s3://{INPUTS_BUCKET}/{args.example.name}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
