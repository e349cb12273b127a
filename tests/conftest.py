"""Shared fixtures. Service fixtures (loopback S3 server, ...) live in their own modules."""

pytest_plugins = ["tests.s3_server"]
