"""Validate rendered Kubernetes manifests offline (``deploy/check-k8s.sh``).

Every object of every YAML file given is checked against the schema of its
kind: Kubernetes' own, of the pinned version, from the ``kubernetes-validate``
package, in its strict form (an unknown field is an error); KEDA's custom
resources against the schemas kept in ``deploy/k8s/schemas/`` (closed the same
way, see its README). An object of a kind neither knows is an error, never
skipped. Prints one line per problem and exits 1 when there is any.

Usage: python deploy/validate_k8s.py [--kubernetes-version 1.32.0] FILE.yaml...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.32.0"
"""The Kubernetes version the manifests are written for (kubectl 1.32)."""

SCHEMAS = Path(__file__).resolve().parent / "k8s" / "schemas"
KEDA_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): SCHEMAS / "keda-2.16.1" / "scaledobject.yaml",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): SCHEMAS / "keda-2.16.1" / "triggerauthentication.yaml",
}
"""The custom resources known, by apiVersion and kind, and their schemas."""


def closed(schema: Any) -> Any:
    """``schema`` with every object that lists ``properties`` and says nothing
    of ``additionalProperties`` closed to other fields (strict field validation)."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: closed(value) for key, value in schema.items()}
    if "properties" in result and "additionalProperties" not in result:
        result["additionalProperties"] = False
    return result


def problems_of(document: dict[str, Any], version: str) -> list[str]:
    """What is wrong with one object (empty when it validates)."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if (api_version, kind) in KEDA_SCHEMAS:
        schema = closed(yaml.safe_load(KEDA_SCHEMAS[api_version, kind].read_text(encoding="utf-8")))
        validator = jsonschema.Draft202012Validator(schema)
        return [
            f"{'.'.join(str(part) for part in error.absolute_path) or '(top)'}: {error.message}"
            for error in sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
        ]
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {kind} ({api_version}) in Kubernetes {version} or deploy/k8s/schemas"]
    except kubernetes_validate.ValidationError as error:
        return [f"{'.'.join(str(part) for part in error.path) or '(top)'}: {error.message}"]
    return []


def main(argv: list[str]) -> int:
    """Validate every object of the files in ``argv``; 0 when all validate, 1 otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubernetes-version", default=KUBERNETES_VERSION)
    parser.add_argument("files", nargs="+", type=Path)
    arguments = parser.parse_args(argv)
    failures = 0
    for path in arguments.files:
        documents = [document for document in yaml.safe_load_all(path.read_text(encoding="utf-8")) if document]
        if not documents:
            print(f"{path}: no object", file=sys.stderr)
            failures += 1
        for document in documents:
            name = f"{document.get('kind')}/{document.get('metadata', {}).get('name')}"
            for problem in problems_of(document, arguments.kubernetes_version):
                print(f"{path}: {name}: {problem}", file=sys.stderr)
                failures += 1
        print(f"{path}: {len(documents)} objects checked against Kubernetes {arguments.kubernetes_version}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
