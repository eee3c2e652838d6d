"""analysis/configuration.py: one name per configuration, the same in every display."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dlbench.analysis import configuration
from dlbench.analysis.configuration import config_key, config_label, config_parts
from dlbench.measurement.config import RunConfig

BERT_DDP_TINY = {"workload": "bert-base-squad", "precision": "amp-bf16", "compile": "default", "batch_size": 64,
                 "seq_len": 384, "world_size": 2, "flavour": "tiny"}


def test_compact_form_names_what_is_not_the_default():
    assert config_label({"workload": "resnet50", "precision": "amp-fp16", "compile": "default",
                         "batch_size": 256}) == "resnet50 amp-fp16 compile=default bs=256"
    assert config_label(BERT_DDP_TINY) == "bert-base-squad amp-bf16 compile=default bs=64 seq=384 x2 tiny"


def test_words_form_for_table_cells():
    assert config_label(BERT_DDP_TINY, words=True) == "bert-base-squad amp-bf16 compile default bs 64 seq 384 2 GPUs tiny"
    eager = {**BERT_DDP_TINY, "compile": "off", "world_size": 1, "flavour": "full"}
    assert config_label(eager, words=True) == "bert-base-squad amp-bf16 eager bs 64 seq 384"


@pytest.mark.parametrize("missing", [{}, {"scenario": None, "compile": None, "world_size": None, "flavour": None}])
def test_missing_fields_read_as_their_defaults(missing):
    row = {"workload": "resnet50", "precision": "fp32", "batch_size": 32, **missing}
    assert config_label(row) == "resnet50 fp32 compile=off bs=32"
    assert config_label(row, words=True) == "resnet50 fp32 eager bs 32"
    # A version-1 result names no scenario: it measured training.
    assert config_key(row) == ("train", "resnet50", "fp32", "off", 32, None, 1, "full", None)


def test_results_of_two_scenarios_never_share_a_key():
    train = {"workload": "resnet50", "precision": "fp32", "batch_size": 32}
    assert config_key({**train, "scenario": "train"}) == config_key(train)
    assert config_key({**train, "scenario": "infer"}) != config_key(train)


def test_generations_of_different_lengths_never_share_a_key():
    gen = {"scenario": "generate", "workload": "llama-3.1-8b", "precision": "bf16", "batch_size": 1, "seq_len": 512}
    assert config_key({**gen, "new_tokens": 128}) != config_key({**gen, "new_tokens": 32})
    assert config_key({**gen, "new_tokens": 128}) == config_key({**gen, "new_tokens": 128})


def test_per_device_series_and_workload_left_out():
    assert config_label(BERT_DDP_TINY, per_device=True) == "bert-base-squad amp-bf16 compile=default bs=64/device seq=384 tiny"
    assert config_parts(BERT_DDP_TINY, words=True, workload=False) == [
        "amp-bf16", "compile default", "bs 64", "seq 384", "2 GPUs", "tiny"]


def test_configurations_that_differ_read_differently():
    """Every identifying field shows: two configurations never share a label (the old copies dropped some)."""
    variants = [BERT_DDP_TINY] + [{**BERT_DDP_TINY, key: value} for key, value in (
        ("workload", "bert-large-squad"), ("precision", "fp32"), ("compile", "off"), ("batch_size", 32),
        ("seq_len", 128), ("world_size", 4), ("flavour", "full"))]
    for words in (False, True):
        labels = [config_label(v, words=words) for v in variants]
        assert len(set(labels)) == len(variants), labels


def test_run_config_label_is_the_shared_label():
    config = RunConfig("bert-base-squad", precision="amp-bf16", compile="default", batch_size=64, seq_len=384,
                       world_size=2, flavour="tiny")
    assert config.label == config_label(config.to_dict()) == config_label(BERT_DDP_TINY)


def test_one_precision_and_compile_mode_check_for_run_estimate_and_reference():
    from dlbench.analysis import points
    from dlbench.errors import BadInput
    from dlbench.measurement.capabilities import unsupported_reason
    from dlbench.measurement.config import PRECISIONS, check_compile_mode, check_precision

    assert check_precision("amp-bf16") == "amp-bf16" and check_compile_mode("max-autotune") == "max-autotune"
    assert check_precision("FP8") == "fp8" and check_precision("int8-weight-only") == "int8-weight-only"  # infer
    with pytest.raises(BadInput) as bad_precision:
        check_precision("fp4")
    assert str(bad_precision.value) == ("unknown precision 'fp4'; choose from: fp32, tf32, amp-fp16, amp-bf16, "
                                        "fp16, bf16, int8-weight-only, int4-weight-only, fp8")
    assert points.check_precision is check_precision  # estimate and advise
    assert configuration.check_precision is check_precision and configuration.PRECISIONS is PRECISIONS
    assert unsupported_reason(RunConfig("resnet50", precision="fp4")) == str(bad_precision.value)
    with pytest.raises(BadInput, match="^unknown compile mode 'fast'; choose from: off, default"):
        check_compile_mode("fast")
    assert unsupported_reason(RunConfig("resnet50", compile="fast")).startswith("unknown compile mode 'fast'")


def test_precision_and_compile_names_are_taken_in_any_case(capsys):
    # Workload names were taken in any case, precisions not: `-p AMP-FP16` was "unknown precision".
    from dlbench.analysis.estimate import estimate
    from dlbench.cli.reference import filter_published
    from dlbench.measurement.config import check_compile_mode, check_precision
    from dlbench.runner.plan import RunOptions, validate_options

    assert check_precision(" AMP-FP16") == "amp-fp16" and check_compile_mode("Max-Autotune") == "max-autotune"
    options = validate_options(RunOptions(precisions=["TF32", "amp-BF16"], compile_modes=["Default"]))
    assert options.precisions == ["tf32", "amp-bf16"] and options.compile_modes == ["default"]
    config = RunConfig("resnet50", precision="AMP-FP16", compile="OFF")
    assert (config.precision, config.compile) == ("amp-fp16", "off")
    assert estimate("A100 SXM4 80GB", "resnet50", "TF32").precision == "tf32"
    assert filter_published(workload="resnet50", precision="AMP-FP16") == filter_published(
        workload="resnet50", precision="amp-fp16") != []


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_analysis_imports_neither_runner_nor_report_nor_torch():
    """STYLE: data flows runner -> analysis -> report; analysis/ reads plain dicts and never pulls in the runner
    (which reaches torch) or the renderers. Every import in the file counts, function-level ones included."""
    analysis = Path(configuration.__file__).parent
    offenders = {}
    for path in sorted(analysis.glob("*.py")):
        bad = sorted(name for name in _imported_modules(path)
                     if name.split(".")[0] == "torch"
                     or name.startswith(("dlbench.runner", "dlbench.report", "dlbench.cli")))
        if bad:
            offenders[path.name] = bad
    assert offenders == {}



def test_reference_filter_takes_a_workload_that_only_the_given_rows_hold():
    import dataclasses

    from dlbench.cli.reference import filter_published
    from dlbench.errors import BadInput
    from dlbench.reference import load_published

    row = dataclasses.replace(load_published()[0], workload="gpt2-small")
    assert filter_published(workload="GPT2-small", published=[row]) == [row]
    with pytest.raises(BadInput, match="unknown workload"):
        filter_published(workload="gpt3", published=[row])
