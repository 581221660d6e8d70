"""Layers are folders and imports run one way (down): docs/design.md, each folder's README.md.

Every import of the package's own modules is read from the source (imports inside functions counted,
``if TYPE_CHECKING:`` blocks not), and two rules are checked:

- a module of a layer imports only modules of its own layer or of a lower one (the order below, which
  each folder's README states), so nothing climbs back up; and
- the module graph has no cycle, so every module can be read knowing only what it imports.

Imports inside functions (late imports) are allowed only in the faces that load commands on first use
for cold start (``cli/``, ``web/``) and in ``probe/`` (PyTorch, an optional extra, loads when it runs).
"""
from __future__ import annotations

import ast
from pathlib import Path

import inferbound

PKG = Path(inferbound.__file__).resolve().parent

#: lowest first; a module may import its own layer and any layer before it
LAYERS = ("base", "model", "hardware", "deploy", "operators", "pricing", "step", "workloads", "sim", "bench", "fleet", "search",
          "validation", "calibration", "faces", "probe", "", "web", "cli")  # "" = the package root (the Python API)
LATE_IMPORTS_ALLOWED = ("cli", "web", "probe")  # probe: PyTorch, an optional extra, loads when probe runs


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


MODULES = _modules()


def _targets(module: str, is_pkg: bool, node) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "inferbound"]
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
        if target.split(".")[0] != "inferbound":
            return []
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]


def imports() -> list[tuple[str, str, bool, int]]:
    """(importer, imported module, inside a function, line) for every import of the package's modules."""
    edges = []
    for module, (path, is_pkg) in MODULES.items():
        def walk(node, late):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    edges.extend((module, t, late, child.lineno) for t in _targets(module, is_pkg, child))
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                walk(child, late or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        walk(ast.parse(path.read_text()), False)
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PKG / parts[1]).is_dir() else ""


def test_every_module_sits_in_a_declared_layer():
    loose = sorted(m for m in MODULES if layer(m) not in LAYERS or (layer(m) == "" and m != "inferbound"))
    assert not loose, f"modules outside a layer folder: {loose}"


def test_every_layer_folder_has_a_short_readme_naming_what_it_may_import():
    for name in filter(None, LAYERS):
        readme = PKG / name / "README.md"
        assert readme.is_file(), f"{name}/ has no README.md"
        lines = [ln for ln in readme.read_text().splitlines() if ln.strip()]
        assert 1 <= len(lines) <= 5, f"{name}/README.md: {len(lines)} lines (at most 5)"
        assert "May import" in readme.read_text(), f"{name}/README.md does not say what it may import"


def test_imports_run_down():
    up = [f"{a} -> {b} (line {ln}{', late' if late else ''})" for a, b, late, ln in imports()
          if LAYERS.index(layer(a)) < LAYERS.index(layer(b))]
    assert not up, "imports that climb back up:\n" + "\n".join(up)


def test_no_import_cycle():
    graph: dict[str, set[str]] = {}
    for a, b, _, _ in imports():
        if a != b:
            graph.setdefault(a, set()).add(b)
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))
    for v in list(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_late_imports_only_where_cold_start_needs_them():
    late = [f"{a} -> {b} (line {ln})" for a, b, is_late, ln in imports()
            if is_late and layer(a) not in LATE_IMPORTS_ALLOWED]
    assert not late, "imports inside functions outside cli/ and web/:\n" + "\n".join(late)


def test_the_check_sees_a_climbing_import(tmp_path):
    """The rules can fail: an operators module importing the step contract is an upward import."""
    src = "def f():\n    from ..step.contract import price\n"
    node = ast.parse(src).body[0].body[0]
    (target,) = _targets("inferbound.operators.op", False, node)
    assert target == "inferbound.step.contract"
    assert LAYERS.index(layer("inferbound.operators.op")) < LAYERS.index(layer(target))


def test_design_doc_draws_the_layers_in_order():
    """docs/design.md's stack (top first) names the folders in the order this test enforces."""
    doc = (PKG.parents[1] / "docs" / "design.md")
    if not doc.is_file():  # an installed package without the repository's docs
        import pytest
        pytest.skip("docs/design.md is not beside this package (installed without the repository)")
    block = doc.read_text().split("```")[1]
    drawn = [ln.split()[0].rstrip("/") for ln in block.strip().splitlines() if ln.strip()]
    assert drawn == [name or "inferbound" for name in reversed(LAYERS)]
