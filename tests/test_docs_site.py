"""The manual (docs/, mkdocs.yml) and README.md, the front door to it.

Exercise it with `PYTHONPATH=src python -m pytest -q tests/test_docs_site.py`; `make docs` builds the same site.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.rglob("*.md"))

# The two set-up commands, exactly as README shows them (issue 12: they stay, and stay true).
SETUP_BLOCKS = (
    "```bash\nmake run    # creates .venv, installs dlbench, benchmarks whatever is here (CUDA, ROCm, MPS or CPU)\n```",
    "```bash\nmake test   # same set-up plus test extras, then the linter (ruff) and the test suite (pytest)\n```",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(markdown: str) -> str:
    """`markdown` without fenced code blocks and with inline code spans blanked: what links can live in."""
    markdown = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    return re.sub(r"`[^`]*`", "code", markdown)


def _anchors(path: Path) -> set[str]:
    """The ids Python-Markdown's toc extension gives the headings of `path` (as mkdocs renders them)."""
    from markdown.extensions.toc import slugify

    headings = re.findall(r"^#{1,6} (.+)$", re.sub(r"^```.*?^```", "", _text(path), flags=re.M | re.S), flags=re.M)
    return {slugify(heading.replace("`", ""), "-") for heading in headings}


def _commands() -> list[tuple[str, ...]]:
    """Every command and sub-command of the `dlbench` typer app, as name paths: ("run",), ("results", "list")."""
    import typer.main

    from dlbench.cli.app import get_app

    found = []

    def walk(command, path=()):
        if path:
            found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(get_app()))
    return found


def _nav_files(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    return [f for item in node for f in _nav_files(item)]


def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict` (as `make docs` runs it): no broken link or anchor, no page left out of the nav."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # Not --quiet: mkdocs then drops warnings before --strict counts them, and a broken link passes.
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "cli" / "run" / "index.html").exists()


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(_text(ROOT / "mkdocs.yml"))
    nav = _nav_files(config["nav"])
    pages = [page.relative_to(DOCS).as_posix() for page in PAGES]
    assert sorted(nav) == sorted(pages)
    assert len(nav) == len(set(nav))
    assert config["theme"]["name"] == "material" and config.get("strict") is True


def test_every_command_has_a_page_and_a_line_in_the_readme():
    manual = " ".join(_text(page) for page in PAGES)
    manual = " ".join(manual.split())  # a command may wrap at a line end
    readme = _text(README)
    commands = _commands()
    assert {"run", "results", "compare", "report", "gpus", "advise", "doctor", "fleet"} <= {c[0] for c in commands}
    unmentioned = [" ".join(c) for c in commands if f"dlbench {' '.join(c)}" not in manual]
    assert unmentioned == [], "commands no page of docs/ mentions as `dlbench NAME`"
    missing = [c[0] for c in commands if len(c) == 1 and f"`dlbench {c[0]}`" not in readme]
    assert missing == [], "commands without their line in README.md"
    overview = _text(DOCS / "cli" / "index.md")
    assert [c[0] for c in commands if len(c) == 1 and f"`dlbench {c[0]}`" not in overview] == []


def test_the_readme_is_a_front_door():
    readme = _text(README)
    assert len(readme.splitlines()) <= 150
    for block in SETUP_BLOCKS:
        assert block in readme
    # ... and they stay true: `make test` lints, builds the manual and runs pytest; `make run` runs dlbench.
    makefile = _text(ROOT / "Makefile")
    assert re.search(r"^test: install lint docs$", makefile, flags=re.M)
    assert re.search(r"^lint: install\n\t\$\(BIN\)/ruff check ", makefile, flags=re.M)
    assert re.search(r"^run: install\n\t\$\(BIN\)/dlbench run$", makefile, flags=re.M)
    assert "mkdocs build --strict" in makefile
    # the front door leads into every page of the manual's nav top level
    linked = set(re.findall(r"\]\((docs/[^)#]+)", readme))
    assert {"docs/install.md", "docs/cli/run.md", "docs/methodology.md", "docs/data.md",
            "docs/development.md"} <= linked


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path):
    broken = []
    for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", _prose(_text(path))):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif path != README and DOCS not in linked.parents:
            broken.append(f"{target}: outside docs/ (the site would not have it)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_lead_ins_start_their_own_paragraph(path):
    """A `**Lead-in.**` glued to the line above renders inside the previous paragraph (the fleet section's did)."""
    lines = _text(path).splitlines()
    glued = [f"{i + 1}: {line[:40]}" for i, line in enumerate(lines)
             if i and re.match(r"^\*\*[A-Z][^*]+\.\*\*", line) and lines[i - 1].strip()]
    assert glued == []


PACKAGE = ROOT / "src" / "dlbench"
REPO_FOLDERS = ("src/", "tests/", "benchmarks/", "tools/", "examples/", "docs/", ".ci/")


def _named_files_and_modules(text: str) -> tuple[list[str], list[str]]:
    """Repository paths (`src/dlbench/analysis/cost.py`, `store/schema.py`) and dotted names
    (`dlbench.analysis.stats.summarize`) that `text` shows in code spans."""
    spans = re.findall(r"`([^`\n]+)`", text)
    paths = [s for s in spans if re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", s) and "/" in s and not s.startswith("/")]
    dotted = [m for s in spans if "/" not in s for m in re.findall(r"\bdlbench(?:\.\w+)+", s)]
    # `dlbench.db` is a file name, not a module: only names whose first part is one of the package's count
    dotted = [m for m in dotted if (PACKAGE / m.split(".")[1]).exists() or (PACKAGE / f"{m.split('.')[1]}.py").exists()]
    return paths, dotted


def _top_level_names(module: Path) -> set[str]:
    """What `module` defines or imports at its top level."""
    import ast

    names = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _resolves(dotted: str) -> bool:
    """`dlbench.a.b.name`: the longest module prefix exists, and the rest is a name defined in it."""
    parts = dotted.split(".")[1:]
    for cut in range(len(parts), -1, -1):
        base = PACKAGE.joinpath(*parts[:cut])
        module = base.with_suffix(".py") if cut else PACKAGE / "__init__.py"
        if not module.exists() and (base / "__init__.py").exists():
            module = base / "__init__.py"
        if module.exists():
            return not parts[cut:] or parts[cut] in _top_level_names(module)
    return False


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_files_and_modules_the_manual_names_exist(path):
    """A module moved or renamed leaves no stale name in the manual (its pages name files to read)."""
    paths, dotted = _named_files_and_modules(_text(path))
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    missing = []
    for name in paths:
        if any(Path(part).stem.isupper() and Path(part).stem != "README" for part in name.split("/")):
            continue  # a placeholder: `src/dlbench/scenarios/NAME.py`, `DIR/index.html`
        if name.startswith(REPO_FOLDERS):
            if not (ROOT / name).exists():
                missing.append(name)
        elif name.split("/")[0] in folders and not (PACKAGE / name).exists():
            missing.append(name)
    missing += [name for name in dotted if not _resolves(name)]
    assert missing == []
