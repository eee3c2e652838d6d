"""Hypothesis strategies and checks shared by the fuzz tests (tests/test_fuzz_cli.py, tests/test_fuzz_documents.py):
the values a user may type, and what a command may answer.

Every command must either work (exit 0, or 1 where it documents 1) or end with exit 2 and exactly one `error:`
line, never a traceback or dlbench's "internal error" line.
"""

from __future__ import annotations

import contextlib
import io
import sys

from hypothesis import strategies as st

# Unicode text as a command line carries it: no NUL (argv cannot hold one), but anything else, including the
# lone surrogates Python makes of bytes that are not UTF-8 (`dlbench fleet $'\xff'`).
TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=24)
ODD = st.sampled_from(["", " ", "-", "--", "\t", "\n", "\udcff", "é", "☃", "日本語", "\u202e", "\x1b[31m", "%s",
                       "{}", "'", '"', ";", "*", "../..", "a" * 300, "latest", "LATEST", "0", "-1", "nan", "inf",
                       "-inf", "1e309", "1e-320", "9" * 40, "0x10", "1_000", "١٢٣", "all", "none", "null"])
NUMBER = st.one_of(
    st.integers(-5, 300).map(str),
    st.integers(-(2**80), 2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-1e3, 1e3).map(lambda x: f"{x:.6g}"),
)
WORDS = st.sampled_from(["resnet50", "bert-base-squad", "bert-large-squad", "amp-fp16", "amp-bf16", "tf32", "fp32",
                         "default", "max-autotune", "off", "cpu", "cuda", "auto", "H100", "A100", "h100 sxm",
                         "NVIDIA H100 80GB HBM3", "RTX 4090", "llama-3-8b", "llama-3-70b", "mixtral-8x7b", "train",
                         "inference", "decode", "prefill", "chat", "full", "lora", "qlora", "adamw", "sgd",
                         "7d", "12h", "30m", "2w", "3M", "-5d", "0m", "99999999999999999999d", "2026-11-20",
                         "2026-02-30", "0001-01-01", "9999-12-31T23:59:59+14:00", "2026-11-20T04:00:00Z",
                         "node*", "[", "1M..1G", "1K,64M", "0..1", "all_reduce", "pcie", "sxm", "csv", "json",
                         "1", "2", "8", "64", "1024"])
STRING = st.one_of(TEXT, ODD, WORDS)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`dlbench ARGV` through the real entry point in this process, stdin empty: (exit code, stdout, stderr)."""
    from dlbench.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO("")  # a confirmation prompt reads end of input: "no"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = saved_stdin
    return code, out.getvalue(), err.getvalue()


def check_outcome(argv: list[str], code: int, out: str, err: str, may_exit_1: bool = False) -> None:
    """Worked (0, or 1 where documented), or exit 2 with one `error:` line; never a traceback."""
    said = f"dlbench {argv!r} exited {code}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err and "Traceback" not in out, said
    assert "internal error" not in err, said
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, said
    elif code == 1:
        assert may_exit_1, said
    else:
        assert code == 0, said
