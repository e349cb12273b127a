#!/usr/bin/env python3
"""A small context system for ``eceb run``: BM25 over a corpus, packed to the budget.

Copy it as the starting point of your own. It speaks eceb's subprocess
protocol: eceb starts it once, writes one JSON request per line on its
standard input and reads one JSON response per line on its standard output
(schemas ``schema/context-request-v0.1.json`` and
``schema/context-response-v0.1.json``). It writes nothing else on standard
output; diagnostics go to standard error.

At start it reads the registry (JSON Lines: a header, then one artifact per
line) and every registered file of the corpus directory, and indexes their
texts with BM25 (``bm25s``). For each request it

1. keeps the artifacts the request permits: classification in
   ``permissions.allowed_classifications`` and id not in
   ``permissions.denied_artifacts``;
2. ranks them by BM25 score for the query (ties by artifact id), leaving
   out those that share no word with it;
3. packs whole artifacts, best first, into the token budget left once the
   query and the prompt template are counted (an artifact that does not fit
   is skipped, the next ones are still tried);
4. answers the rendered context and, for each artifact in it, the BLAKE3
   digest of the bytes it read.

Same request, same context: nothing depends on time, randomness or the
order of the files on disk, so every repetition gets the same context.

Usage (from this directory, with ``deploy/requirements.lock`` installed)::

    python3 context_system.py --registry ../public-eng-mix/registry.jsonl \\
        --corpus ../../../shared/corpora/public-eng-mix/files

Dependencies: the standard library, ``blake3`` and ``bm25s``.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

import blake3
import bm25s

BYTES_PER_TOKEN = 3
"""Our own token estimate: ceil(UTF-8 bytes / 3). Conservative (English
prose is about 4 bytes a token), so the prompt stays within the budget as
the provider counts it."""

PROMPT_RESERVE_TOKENS = 200
"""Tokens kept for the prompt template around the context and the query."""


def estimate_tokens(text: str) -> int:
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def render(artifact: dict, text: str) -> str:
    """One artifact's block of the context."""
    artifact_id = html.escape(artifact["artifact_id"], quote=True)
    path = html.escape(artifact["path"], quote=True)
    return f'<artifact id="{artifact_id}" path="{path}">\n{text}\n</artifact>\n'


class Corpus:
    """The registered artifacts, their bytes' digests and texts, and a BM25 index over the texts."""

    def __init__(self, registry: Path, corpus_dir: Path) -> None:
        lines = registry.read_text(encoding="utf-8").splitlines()
        artifacts = sorted((json.loads(line) for line in lines[1:] if line.strip()), key=lambda a: a["artifact_id"])
        self.artifacts: list[dict] = []
        self.texts: list[str] = []
        self.digests: list[str] = []
        for artifact in artifacts:
            try:
                data = (corpus_dir / artifact["path"]).read_bytes()
            except OSError as error:  # a missing file is never offered
                print(f"skipped {artifact['artifact_id']}: {error.strerror}", file=sys.stderr)
                continue
            self.artifacts.append(artifact)
            self.texts.append(data.decode("utf-8", errors="replace"))
            self.digests.append(blake3.blake3(data).hexdigest())
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(self.texts, stopwords="en", show_progress=False), show_progress=False)
        print(f"indexed {len(self.artifacts)} artifacts", file=sys.stderr)

    def ranked(self, query: str, permissions: dict) -> list[int]:
        """Positions of the permitted artifacts sharing a word with ``query``, best first."""
        allowed = set(permissions["allowed_classifications"])
        denied = set(permissions.get("denied_artifacts", ()))
        words = bm25s.tokenize(query, stopwords="en", return_ids=False, show_progress=False)[0]
        known = self.index.get_tokens_ids(words)
        if not known:
            return []
        scores = self.index.get_scores_from_ids(known)
        candidates = [
            i
            for i, artifact in enumerate(self.artifacts)
            if artifact["classification"] in allowed and artifact["artifact_id"] not in denied and scores[i] > 0
        ]
        return sorted(candidates, key=lambda i: (-float(scores[i]), self.artifacts[i]["artifact_id"]))

    def build(self, request: dict) -> dict:
        """The response to one request."""
        response = {"schema": "symgliph.eceb/context-response-v0.1", "request_id": request["request_id"]}
        if request["strategy"] != "compiled":
            return {**response, "error": f"this system builds only 'compiled' contexts, not {request['strategy']!r}"}
        available = request["budget_tokens"] - estimate_tokens(request["query"]) - PROMPT_RESERVE_TOKENS
        blocks: list[str] = []
        selected: list[dict] = []
        used = 0
        for i in self.ranked(request["query"], request["permissions"]):
            block = render(self.artifacts[i], self.texts[i])
            cost = estimate_tokens(block)
            if used + cost > available:
                continue  # too large for what is left: try the next one
            blocks.append(block)
            used += cost
            selected.append({"artifact_id": self.artifacts[i]["artifact_id"], "observed_digest": self.digests[i]})
        context = "".join(blocks)
        return {
            **response,
            "context": context,
            "selected_artifacts": selected,
            "local_prompt_tokens": estimate_tokens(context),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registry", type=Path, required=True, help="the registry (JSON Lines)")
    parser.add_argument("--corpus", type=Path, required=True, help="the corpus directory")
    options = parser.parse_args()
    corpus = Corpus(options.registry, options.corpus)
    for line in sys.stdin.buffer:  # one request per line, until eceb closes our standard input
        request = None
        try:
            request = json.loads(line)
            response = corpus.build(request)
        except (ValueError, KeyError, TypeError) as error:  # answer, never crash: eceb reports the error
            request_id = request.get("request_id", "") if isinstance(request, dict) else ""
            response = {
                "schema": "symgliph.eceb/context-response-v0.1",
                "request_id": str(request_id),
                "error": f"bad request: {type(error).__name__}",
            }
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
