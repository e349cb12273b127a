#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine, with Debian's
# docker-compose 1.29 (`config` only parses, interpolates and checks the file
# against the Compose schema): the default services, then with the "example"
# profile enabled.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker-compose >/dev/null; then
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker-compose
fi

# Validate with the documented defaults, not whatever the caller's shell exports.
unset ECEB_REDIS_PASSWORD ECEB_S3_ACCESS_KEY ECEB_S3_SECRET_KEY AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY

docker-compose --version
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml --profile example config -q
# Every service the file defines, profiles included, must be listed.
services=$(docker-compose -f docker-compose.yml --profile example config --services | sort | tr '\n' ' ')
expected="createbuckets flower minio redis submit-example verify-example worker "
if [[ "$services" != "$expected" ]]; then
    echo "check-compose: services are '$services', expected '$expected'" >&2
    exit 1
fi
echo "check-compose: docker-compose.yml is valid"
