"""The architecture, checked mechanically over the source: layers import
only from layers before them, no two modules import each other in a cycle,
and the pure layers perform no I/O, start no thread or process, and import
no service client (in a fresh interpreter, not even through a library:
``tests/integration/test_layers_fresh_interpreter.py``)."""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO

LAYERS = (
    ("eceb_worker", "eceb_worker.errors", "eceb_worker.settings"),
    ("eceb_worker.core",),
    ("eceb_worker.corpus",),
    ("eceb_worker.families",),
    ("eceb_worker.documents", "eceb_worker.render"),
    ("eceb_worker.io",),
    ("eceb_worker.pipeline",),
    ("eceb_worker.executors",),
    ("eceb_worker.cluster",),
    ("eceb_cli",),
)
"""Each layer may import from itself and the layers before it, never after."""

PURE = ("eceb_worker.core", "eceb_worker.corpus", "eceb_worker.families", "eceb_worker.render")
"""Packages that perform no I/O: they get bytes, streams of chunks or
adapters (Protocols) from their callers."""

PAIRED = tuple(f"eceb_worker.{layer}.paired" for layer in ("families", "io", "pipeline", "render"))
"""The paired task-context benchmark: a ``paired`` package in each layer it
has a part in (its pure core first); its command lines are ``eceb_cli.pair*``."""

PAIRED_ENTRY_POINTS = ("eceb_worker.documents", "eceb_cli.pair")
"""The modules outside :data:`PAIRED` that may import from it: the document
registry and the ``eceb pair`` command lines."""

SERVICE_CLIENTS = {"celery", "kombu", "redis", "boto3", "botocore", "s3transfer", "click"}
IO_AND_CONCURRENCY = {
    "os",
    "io",
    "pathlib",
    "tempfile",
    "shutil",
    "mmap",
    "socket",
    "subprocess",
    "threading",
    "concurrent",
    "multiprocessing",
    "asyncio",
    "signal",
    "urllib.request",
    "http",
}


def modules() -> Iterator[tuple[str, Path]]:
    for package in ("eceb_worker", "eceb_cli"):
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports(path: Path) -> Iterator[tuple[str, int]]:
    """Every module ``path`` imports at run time (``if TYPE_CHECKING:`` blocks
    left out), anywhere in the file, with its line."""
    return iter(_imports(path))


@functools.cache
def _imports(path: Path) -> tuple[tuple[str, int], ...]:
    """:func:`imports`, each file parsed once for all the tests."""
    return tuple(_parsed_imports(path))


def _parsed_imports(path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for inner in node.body for child in ast.walk(inner))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno


def layer_of(module: str) -> int:
    best = -1
    for index, layer in enumerate(LAYERS):
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                best = index if prefix != "eceb_worker" or module in layer else best
    return best


def own(module: str) -> bool:
    return module.split(".")[0] in ("eceb_worker", "eceb_cli")


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=str)
def test_no_import_from_a_later_layer(module: str, path: Path) -> None:
    mine = layer_of(module)
    assert mine >= 0, f"{module} belongs to no layer: add it to LAYERS"
    later = [
        f"line {line}: {target} (layer {layer_of(target)})"
        for target, line in imports(path)
        if own(target) and layer_of(target) > mine
    ]
    assert not later, f"{module} (layer {mine}) imports from later layers: {later}"


def test_no_import_cycle_between_modules() -> None:
    known = dict(modules())
    graph = {module: {t for t, _ in imports(path) if t in known and t != module} for module, path in known.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycle = [*stack[stack.index(target) :], target]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


@pytest.mark.parametrize(("module", "path"), [(m, p) for m, p in modules() if m.startswith(PURE)], ids=str)
def test_pure_layers_import_no_io_thread_process_or_service_module(module: str, path: Path) -> None:
    forbidden = [
        f"line {line}: {target}"
        for target, line in imports(path)
        if any(target == name or target.startswith(name + ".") for name in SERVICE_CLIENTS | IO_AND_CONCURRENCY)
    ]
    assert not forbidden, f"{module} is pure but imports {forbidden}"


def in_paired(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in PAIRED)


def test_the_paired_family_is_in_its_paired_packages() -> None:
    """Outside the paired packages, only the document registry and the
    ``eceb pair`` command lines import from them; the paired packages import
    nothing from another family; and no module outside them is named for
    the paired benchmark (``pair*``, ``experiment``)."""
    outside = [
        f"{module} line {line}: {target}"
        for module, path in modules()
        if not in_paired(module)
        and not any(module == entry or module.startswith(entry + "_") for entry in PAIRED_ENTRY_POINTS)
        for target, line in imports(path)
        if in_paired(target)
    ]
    assert not outside, f"the paired packages imported from outside them: {outside}"
    crossing = [
        f"{module} line {line}: {target}"
        for module, path in modules()
        if in_paired(module)
        for target, line in imports(path)
        if target.startswith("eceb_worker.families.") and not in_paired(target)
    ]
    assert not crossing, f"the paired packages import another family: {crossing}"
    misplaced = [
        module
        for module, _ in modules()
        if module.startswith("eceb_worker.")
        and not in_paired(module)
        and module.rsplit(".", 1)[-1].startswith(("pair", "experiment"))
    ]
    assert not misplaced, f"paired modules outside the paired packages: {misplaced}"


_COMPLEXITY_RULES = ("C901", "PLR0912", "PLR0915")
_NOQA = re.compile(r"#\s*noqa:\s*([A-Z0-9, ]+?)\s*(?:-\s*(\S.*))?$")


def test_functions_stay_within_the_complexity_budget_or_say_why() -> None:
    """A complexity budget rather than a length cap: ruff's C901 (at most 12)
    and its branch and statement rules are on (``ruff check`` enforces them
    in CI), and a function above the budget says why on its def line."""
    lint = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"] and "PL" in lint["select"]
    assert lint["mccabe"]["max-complexity"] == 12
    assert not set(_COMPLEXITY_RULES) & set(lint["ignore"])
    unexplained = []
    for module, path in modules():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found = _NOQA.search(line)
            codes = {code.strip() for code in found.group(1).split(",")} if found else set()
            if found and set(_COMPLEXITY_RULES) & codes and not found.group(2):
                unexplained.append(f"{module}:{number}")
    assert not unexplained, f"over the complexity budget without a reason: {unexplained}"


def test_every_setting_is_in_the_settings_table_and_its_page() -> None:
    """The environment is read in settings.py alone, and docs/SETTINGS.md lists every variable it reads."""
    from eceb_worker.settings import SETTINGS

    readers = [
        f"{module} line {line}"
        for module, path in modules()
        if module != "eceb_worker.settings"
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "os.environ.get(" in text or "os.getenv(" in text or "envvar=" in text
    ]
    assert not readers, f"environment read outside eceb_worker.settings: {readers}"
    page = (REPO / "docs" / "SETTINGS.md").read_text(encoding="utf-8")
    listed = [line.split("`")[1] for line in page.splitlines() if line.startswith("| `")]
    assert listed == [setting.name for setting in SETTINGS]
