"""Loopback S3-compatible server fixture (moto server mode)."""
