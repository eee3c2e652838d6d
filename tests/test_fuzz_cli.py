"""Every command's options, fuzzed: whatever a user types, a command works or ends with exit 2 and one `error:` line
(no traceback), and the runs stored in the database are unchanged.

    PYTHONPATH=src python -m pytest -q tests/test_fuzz_cli.py

The commands and their options are read from the typer application itself, so a new command or option is fuzzed
without touching this file. Values come from `fuzz_inputs`: garbage and unicode text, negative, huge, NaN and
infinite numbers, empty strings, paths that are missing, empty, folders or garbage, run references that exist and
that do not, database URLs that are malformed, unreachable or not databases. `dlbench run` and `dlbench comm`
would start a measurement: they get random options too, but always end with one that fails validation
(`--seed -1`, `--iters 0`), so they are checked up to the point where they would start (and never import torch).
Examples are derandomized (the same every run) and bounded: `EXAMPLES` per command. To hunt for new bugs,
`DLBENCH_FUZZ_EXAMPLES=500` draws that many fresh random examples per command instead.
"""

from __future__ import annotations

import enum
import json
import os
import sys
import typing
from pathlib import Path

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db_helpers import fingerprint
from fleet_docs import node
from fuzz_inputs import NUMBER, STRING, check_outcome, run_cli

EXAMPLES = int(os.environ.get("DLBENCH_FUZZ_EXAMPLES", 20))
HUNT = "DLBENCH_FUZZ_EXAMPLES" in os.environ  # fresh random examples rather than the same ones every run
# Commands that would start a measurement, and the option (appended last, so that it wins) that stops them first.
POISON = {("run",): ["--seed", "-1"], ("comm",): ["--iters", "0"]}
# Commands whose exit code 1 is documented: fleet (a node flagged), delete (the confirmation answered no).
EXIT_1 = {("fleet",), ("results", "delete")}
# Commands that would change the stored runs if given a run that exists: they get references that cannot.
MUTATING = {("results", "delete"), ("results", "import")}


def _commands() -> list[tuple[tuple[str, ...], list]]:
    """(path, parameters) of every command (and of every group that runs on its own, as `dlbench gpus`)."""
    from dlbench.cli.app import get_app

    found = []

    def walk(command, path: tuple[str, ...]) -> None:
        subs = getattr(command, "commands", None) or {}
        if path and (not subs or getattr(command, "invoke_without_command", False)):
            found.append((path, list(command.params)))
        for name, sub in subs.items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(get_app()), ())
    return found


COMMANDS = _commands()


def _kind(param) -> tuple[str, typing.Any]:
    """What a parameter takes: flag, int, float, path, choice (with the choices) or str."""
    annotation = param.type_descriptor.annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if args and typing.get_origin(annotation) is not list else annotation
    if typing.get_origin(base) is list:
        base = typing.get_args(base)[0]
    if param.param_type_name == "option" and param.is_flag:
        return "flag", None
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return "choice", [e.value for e in base]
    if base is bool:
        return "flag", None
    if base is int:
        return "int", None
    if base is float:
        return "float", None
    if base is Path:
        return "path", None
    return "str", None


@pytest.fixture
def world(tmp_path, monkeypatch):
    """The test's database with a small fleet stored, and files a command may be pointed at; the current folder
    is a scratch one (a report or export written to a garbage relative path lands there)."""
    from dlbench.store import open_store

    docs = [node(f"fz{i:02d}", seed=i) for i in range(1, 5)]
    with open_store() as store:
        for doc in docs:
            store.save_run(doc)
        db_url = f"sqlite:///{store.label}"
    files = tmp_path / "files"
    files.mkdir()
    (files / "stored.json").write_text(json.dumps(docs[0]))
    (files / "garbage.json").write_bytes(b"\x00\xff{not json")
    (files / "empty.json").write_text("")
    (files / "list.json").write_text("[1, 2]")
    (files / "notadb.db").write_text("hello, not SQLite")
    (files / "folder").mkdir()
    scratch = tmp_path / "cwd"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    return {"db": db_url, "files": files, "run_ids": [d["run_id"] for d in docs], "tmp": tmp_path}


def _paths(world) -> st.SearchStrategy[str]:
    f = world["files"]
    fixed = [str(f / n) for n in ("garbage.json", "empty.json", "list.json", "notadb.db", "folder", "missing.json")]
    fixed += [str(f), str(world["tmp"] / "no" / "such" / "dir" / "x.html"), "/dev/null", "/", "/proc/version",
              str(f / "out.html"), str(f / "out.csv")]
    return st.one_of(st.sampled_from(fixed), STRING)


def _refs(world, path: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Run references: for a command that changes the store, only ones that cannot name a stored run."""
    if path in MUTATING:
        return st.one_of(_paths(world), STRING).filter(
            lambda s: not (s.strip().lower() == "latest" or (s.strip() and all(c in "0123456789abcdefABCDEF"
                                                                                 for c in s.strip())))
            and s != str(world["files"] / "stored.json") and s != str(world["files"]))
    stored = [rid[:n] for rid in world["run_ids"] for n in (4, 12, 32)]
    return st.one_of(st.sampled_from([*stored, "latest", str(world["files"] / "stored.json"), str(world["files"])]),
                     _paths(world), STRING)


def _dbs(world) -> st.SearchStrategy[str]:
    f = world["files"]
    return st.one_of(st.sampled_from([
        world["db"], f"sqlite:///{f / 'notadb.db'}", f"sqlite:///{f / 'garbage.json'}", f"sqlite:///{f}",
        f"sqlite:///{world['tmp'] / 'no' / 'such' / 'x.db'}", "sqlite://", "not a url", "mysql://u@h/db",
        "postgresql+psycopg://u@/x?host=/nonexistent-socket-dir", "postgresql+nosuchdriver://u@h/db", "://",
        "sqlite:////dev/null", "sqlite:///:memory:"]), STRING)


def _value(param, path, world) -> st.SearchStrategy[str]:
    kind, choices = _kind(param)
    if param.name == "db":
        return _dbs(world)
    if param.param_type_name == "argument" and kind in ("str", "path"):
        return _refs(world, path) if path != ("gpus", "show") and path != ("fit",) else STRING
    if kind == "choice":
        return st.one_of(st.sampled_from(choices), STRING)
    if kind in ("int", "float"):
        return st.one_of(NUMBER, STRING)
    if kind == "path":
        return _paths(world)
    return STRING


@st.composite
def argv_for(draw, path: tuple[str, ...], params: list, world) -> list[str]:
    chosen = draw(st.lists(st.sampled_from(params), max_size=4, unique_by=lambda p: p.name)) if params else []
    options: list[str] = []
    arguments: list[str] = []
    required_args = [p for p in params if p.param_type_name == "argument" and p.required]
    for param in chosen + [p for p in required_args if p not in chosen]:
        if param.param_type_name == "argument":
            count = draw(st.integers(0, 3)) if param.nargs == -1 else 1
            arguments += [draw(_value(param, path, world)) for _ in range(count)]
            continue
        kind, _ = _kind(param)
        if kind == "flag":
            options.append(draw(st.sampled_from(param.opts + param.secondary_opts)))
            continue
        for _ in range(draw(st.integers(1, 2)) if param.multiple else 1):
            options += [draw(st.sampled_from(param.opts)), draw(_value(param, path, world))]
    if path == ("doctor",):  # without a run (or after `--`), doctor checks this machine and loads its GPUs
        arguments = [a for a in arguments if not a.startswith("-")] or [draw(_refs(world, path).filter(
            lambda s: not s.startswith("-")))]
    return [*path, *options, *arguments, *POISON.get(path, [])]


@pytest.mark.parametrize("path,params", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_takes_any_input(path, params, world):
    torch_before = "torch" in sys.modules
    stored = fingerprint(world["db"])
    assert stored

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not HUNT, database=None,
              suppress_health_check=list(HealthCheck))
    @given(argv=argv_for(path, params, world))
    def one(argv):
        code, out, err = run_cli(argv)
        check_outcome(argv, code, out, err, may_exit_1=path in EXIT_1)
        assert fingerprint(world["db"]) == stored, f"dlbench {argv!r} changed the stored runs"
        if path in POISON:
            assert code == 2 or (code == 0 and any(a in ("--help", "-h") for a in argv)), (argv, code, err)

    one()
    if not torch_before:
        assert "torch" not in sys.modules, f"dlbench {' '.join(path)} imported torch"


def test_the_commands_are_all_there():
    """The enumeration finds every command group's commands (a broken walk would fuzz nothing)."""
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"run", "comm", "fleet", "report", "compare", "doctor", "results list", "results show",
            "results import", "results export", "results delete", "gpus", "advise", "estimate", "cost", "fit",
            "reference list"} <= names


def test_an_argument_that_is_not_utf8_is_one_error_line(world):
    """Found by the fuzzing: `dlbench results list --gpu $'\\xff'` (Python keeps the byte as a lone surrogate) was
    an internal error when SQLite could not encode it; now every command refuses such an argument up front."""
    for argv in (["results", "list", "--gpu", "\udcff"], ["fleet", "--host", "node\udcff"],
                 ["results", "import", "/tmp/\udcff.json"]):
        code, out, err = run_cli(argv)
        assert code == 2 and err.count("error:") == 1 and "UTF-8" in err, (argv, err)
        assert "\\udcff" in err
