"""Shared fixtures. Service fixtures (loopback S3 server, Redis, ...) live in their own modules."""

pytest_plugins = ["tests.s3_server", "tests.redis_server"]
