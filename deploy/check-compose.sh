#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine, with Debian's
# docker-compose 1.29 (`config` only parses, interpolates and checks the file
# against the Compose schema): the default services, then with the "example"
# profile enabled. Then, on the interpolated file: every image is pinned by an
# explicit tag other than `latest`; every published port listens on 127.0.0.1
# only, Redis's among them; Redis requires the password set in
# ECEB_REDIS_PASSWORD and every broker URL carries it; the workers reach MinIO
# inside the compose network (http://minio:9000), not through the host.
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

fail() {
    echo "check-compose: $*" >&2
    exit 1
}
# The interpolated file, with a password of our own, so that its use can be followed.
password=check-compose-password
config=$(ECEB_REDIS_PASSWORD=$password docker-compose -f docker-compose.yml --profile example config)
# The lines of one service's block (services are indented by two spaces).
service() { awk -v name="  $1:" '$0 == name { inside = 1; next } /^  [^ ]/ { inside = 0 } inside' <<<"$config"; }

images=$(awk '$1 == "image:" { print $2 }' <<<"$config")
[[ -n $images ]] || fail "no image found"
while read -r image; do
    tag=${image##*/}
    [[ $tag == *:* && ${tag#*:} != latest && -n ${tag#*:} ]] || fail "image '$image' is not pinned by an explicit tag"
done <<<"$images"

# Published ports, as `config` writes them: HOST_IP:HOST_PORT:CONTAINER_PORT/PROTOCOL.
ports=$(awk '$1 == "ports:" { inside = 1; next } inside && $1 == "-" { print $2; next } { inside = 0 }' <<<"$config")
while read -r port; do
    [[ -z $port || $port == 127.0.0.1:* ]] || fail "a port is published beyond 127.0.0.1 (or not as HOST_IP:PORT:PORT): '$port'"
done <<<"$ports"
grep -qx '127.0.0.1:6379:6379/tcp' <<<"$ports" || fail "Redis is not published on 127.0.0.1:6379"

redis=$(service redis)
grep -q -- 'requirepass $$REDIS_PASSWORD' <<<"$redis" || fail "Redis does not require a password"
! grep -qE -- '--requirepass|-a "|--broker=' <<<"$config" || fail "a password is given on a command line"
grep -qx "      REDIS_PASSWORD: $password" <<<"$redis" || fail "Redis's password is not ECEB_REDIS_PASSWORD"
brokers=$(grep -E '(ECEB_BROKER_URL|ECEB_RESULT_BACKEND|CELERY_BROKER_URL|CELERY_RESULT_BACKEND):' <<<"$config")
[[ -n $brokers ]] || fail "no broker URL found"
! grep -v "redis://:$password@redis:6379/" <<<"$brokers" >&2 || fail "a broker URL does not carry ECEB_REDIS_PASSWORD"

service worker | grep -qx '      ECEB_S3_ENDPOINT_URL: http://minio:9000' || fail "the workers' S3 endpoint is not http://minio:9000"
echo "check-compose: docker-compose.yml is valid"
