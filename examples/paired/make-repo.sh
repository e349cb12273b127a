#!/usr/bin/env sh
# Make the example's fixture repository a git repository at DEST, with one
# commit whose id is the same on every machine (fixed author, committer and
# dates). Usage: examples/paired/make-repo.sh DEST
set -eu
[ $# -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
[ ! -e "$1" ] || { echo "$0: $1 exists" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cp -R "$here/repo" "$1"
cd "$1"
export GIT_AUTHOR_NAME=eceb GIT_AUTHOR_EMAIL=eceb@example.invalid GIT_AUTHOR_DATE='2026-11-01T00:00:00Z'
export GIT_COMMITTER_NAME=eceb GIT_COMMITTER_EMAIL=eceb@example.invalid GIT_COMMITTER_DATE='2026-11-01T00:00:00Z'
git init -q -b main
git add -A
git -c commit.gpgsign=false commit -q -m "greet: the fixture repository of the paired example"
git rev-parse HEAD
