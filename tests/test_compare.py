"""`dlbench compare`: ratios, significance on raw step times, environment warnings, the CLI."""

from __future__ import annotations

import json

import pytest

from dlbench.analysis.compare import compare_documents, config_key, significance
from dlbench.jsonio import write_json_atomic
from report_docs import environment, make_document, make_result, run_cli, telemetry_block


def _row(report, workload="resnet50"):
    return next(r for r in report["rows"] if r["workload"] == workload)


def test_clearly_faster_is_significant_with_the_right_ratio():
    a = make_document([make_result(step_time_s=0.100, noise_s=0.002, seed=1)])
    b = make_document([make_result(step_time_s=0.080, noise_s=0.002, seed=2)])
    report = compare_documents(a, b)
    row = _row(report)
    expected = b["results"][0]["samples_per_s"] / a["results"][0]["samples_per_s"]
    assert row["ratio"] == pytest.approx(expected)
    assert row["ratio"] == pytest.approx(0.100 / 0.080, rel=0.01)
    assert row["change_pct"] == pytest.approx((expected - 1) * 100)
    assert row["significant"] is True
    assert row["welch_p"] < 1e-6 and row["mannwhitney_p"] < 1e-6
    assert report["warnings"] == []


def test_min_change_keeps_small_real_changes_out():
    a = make_document([make_result(step_time_s=0.100, noise_s=0.0005, seed=1)])
    b = make_document([make_result(step_time_s=0.099, noise_s=0.0005, seed=2)])
    assert _row(compare_documents(a, b))["significant"] is True  # ~1% faster, clearly measurable
    row = _row(compare_documents(a, b, min_change_pct=2.0))
    assert row["significant"] is False and "--min-change 2%" in row["reason"]


def test_same_distribution_is_not_significant():
    # Same distribution, different draws: the tests must not call noise a change.
    a = make_document([make_result(step_time_s=0.1, noise_s=0.003, seed=11)])
    b = make_document([make_result(step_time_s=0.1, noise_s=0.003, seed=12)])
    row = _row(compare_documents(a, b))
    assert row["significant"] is False
    assert row["ratio"] == pytest.approx(1.0, abs=0.01)
    assert row["welch_p"] > 0.05


def test_slower_b_gives_negative_change():
    a = make_document([make_result(step_time_s=0.1, seed=1)])
    b = make_document([make_result(step_time_s=0.125, seed=2)])
    row = _row(compare_documents(a, b))
    assert row["change_pct"] == pytest.approx(-20.0, abs=0.5)
    assert row["significant"] is True


def test_only_matching_configurations_are_compared():
    a = make_document([make_result(), make_result(workload="bert-base-squad", seq_len=384, batch_size=32),
                       make_result(precision="tf32")])
    b = make_document([make_result(seed=5), make_result(workload="bert-base-squad", seq_len=256, batch_size=32)])
    report = compare_documents(a, b)
    assert [r["workload"] for r in report["rows"]] == ["resnet50"]
    assert len(report["only_in_a"]) == 2 and len(report["only_in_b"]) == 1
    assert any("seq=384" in label for label in report["only_in_a"])
    assert any("seq=256" in label for label in report["only_in_b"])


def test_failed_result_is_listed_with_a_reason_not_tested():
    a = make_document([make_result()])
    b = make_document([make_result(status="oom")])
    row = _row(compare_documents(a, b))
    assert row["ratio"] is None and row["significant"] is None
    assert "B is oom" in row["reason"]


def test_environment_differences_are_warnings():
    a = make_document([make_result(telemetry=telemetry_block(power_limit_w=400.0))],
                      env=environment(driver_version="550.54"))
    env_b = environment(gpu_name="NVIDIA A100-SXM4-80GB", torch_version="2.5.1+cu124")
    env_b["gpus"][0]["power_limit_w"] = 300.0
    b = make_document([make_result(seed=3)], env=env_b)
    warnings = compare_documents(a, b)["warnings"]
    text = "\n".join(warnings)
    assert "GPU differs" in text and "NVIDIA A100-SXM4-80GB" in text
    assert "NVIDIA driver version differs" in text
    assert "torch version differs" in text
    assert "power limit differs: A 400 W, B 300 W" in text
    assert "CUDA" not in text  # same CUDA on both sides


def test_model_library_versions_differing_are_warnings():
    # The environment records transformers / torchvision / Triton versions because they change the models'
    # code; compare said nothing when they differed.
    versions = {"torchvision": "0.26.0", "transformers": "5.17.0", "triton": "3.6.0", "nvidia-ml-py": None}
    a = make_document([make_result()], env=environment(package_versions=versions))
    b = make_document([make_result(seed=3)],
                      env=environment(package_versions={**versions, "transformers": "5.23.0", "triton": None}))
    warnings = compare_documents(a, b)["warnings"]
    assert "transformers version differs: A 5.17.0, B 5.23.0" in warnings
    assert "triton version differs: A 3.6.0, B not installed" in warnings
    assert not any(w.startswith(("torchvision", "nvidia-ml-py")) for w in warnings)
    older = make_document([make_result(seed=4)])  # written before package_versions: nothing to compare
    assert not any("transformers" in w for w in compare_documents(a, older)["warnings"])


def test_power_limit_from_telemetry_blocks():
    a = make_document([make_result(telemetry=telemetry_block(power_limit_w=700.0))])
    same = make_document([make_result(seed=4, telemetry=telemetry_block(power_limit_w=700.0))])
    lower = make_document([make_result(seed=4, telemetry=telemetry_block(power_limit_w=450.0))])
    assert not any("power" in w for w in compare_documents(a, same)["warnings"])
    assert "GPU power limit differs: A 700 W, B 450 W" in compare_documents(a, lower)["warnings"]


def test_gpu_count_difference_is_a_warning():
    a = make_document([make_result()], env=environment(gpu_count=1))
    b = make_document([make_result()], env=environment(gpu_count=8))
    warnings = compare_documents(a, b)["warnings"]
    assert any("GPU count differs" in w for w in warnings)
    assert not any(w.startswith("GPU differs") for w in warnings)


def test_noisy_result_warns():
    a = make_document([make_result()])
    b = make_document([make_result()])
    b["results"][0]["cv"] = 0.12
    assert any("noisy" in w and "12.0%" in w for w in compare_documents(a, b)["warnings"])


def test_same_run_twice_warns():
    a = make_document([make_result()])
    report = compare_documents(a, a)
    assert report["rows"][0]["significant"] is False
    assert "the same run" in report["warnings"][0]


def test_significance_needs_enough_steps():
    assert significance([0.1], [0.1, 0.2])["significant"] is None
    assert significance([0.1, 0.1], [0.1, 0.1])["significant"] is False
    assert significance([0.1, 0.1], [0.2, 0.2])["significant"] is True


def test_config_key_defaults_missing_fields():
    r = make_result()
    del r["flavour"]
    assert config_key(r) == config_key(make_result())


def _write(tmp_path, name, doc):
    path = tmp_path / name
    write_json_atomic(path, doc)
    return str(path)


def test_cli_compare_json_from_files(tmp_path, capsys):
    a = make_document([make_result(step_time_s=0.1, seed=1)])
    b = make_document([make_result(step_time_s=0.05, seed=2)], env=environment(cuda_version="12.4"))
    code, out, err = run_cli(capsys, "compare", _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b),
                             "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["rows"][0]["ratio"] == pytest.approx(2.0, rel=0.02)
    assert data["rows"][0]["significant"] is True
    assert any("CUDA" in w for w in data["warnings"])


def test_cli_compare_table(tmp_path, capsys):
    a = make_document([make_result(step_time_s=0.1, seed=1)])
    b = make_document([make_result(step_time_s=0.1, seed=2)])
    code, out, err = run_cli(capsys, "compare", _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b))
    assert code == 0, err
    assert "resnet50" in out
    assert "significant" in out and " no " in out


def test_cli_compare_runs_from_the_store(capsys):
    from dlbench.store import open_store

    a = make_document([make_result(step_time_s=0.1, seed=1)], created_at="2026-11-21T10:00:00Z")
    b = make_document([make_result(step_time_s=0.08, seed=2)], created_at="2026-11-22T10:00:00Z")
    store = open_store()
    store.save_run(a)
    store.save_run(b)
    code, out, err = run_cli(capsys, "compare", a["run_id"][:10], "latest", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["a_run_id"], data["b_run_id"]) == (a["run_id"], b["run_id"])
    assert data["rows"][0]["change_pct"] == pytest.approx(25.0, abs=1.0)


def test_cli_compare_unknown_run_is_exit_2(capsys):
    code, out, err = run_cli(capsys, "compare", "deadbeef", "latest")
    assert code == 2
    assert err.startswith("error:") and "Traceback" not in err


def test_cli_compare_needs_b_or_published(tmp_path, capsys):
    a = make_document([make_result()])
    code, _, err = run_cli(capsys, "compare", _write(tmp_path, "a.json", a))
    assert code == 2
    assert "--published" in err


def test_cli_compare_missing_file_is_bad_input(tmp_path, capsys):
    code, _, err = run_cli(capsys, "compare", str(tmp_path / "nope.json"), str(tmp_path / "x.json"))
    assert code == 2
    assert "no such result file" in err and "Traceback" not in err


def test_a_configuration_noisy_in_both_runs_gets_one_warning():
    a = make_document([make_result()])
    b = make_document([make_result()])
    a["results"][0]["cv"], b["results"][0]["cv"] = 0.30, 0.12
    noisy = [w for w in compare_documents(a, b)["warnings"] if "noisy" in w]
    assert len(noisy) == 1
    assert "A 30.0%" in noisy[0] and "B 12.0%" in noisy[0]


def test_cli_compare_table_fits_an_80_column_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    a = make_document([make_result("bert-base-squad", "amp-bf16", seq_len=128, step_time_s=0.1, seed=1)])
    b = make_document([make_result("bert-base-squad", "amp-bf16", seq_len=128, step_time_s=0.09, seed=2)])
    code, out, err = run_cli(capsys, "compare", _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b))
    assert code == 0, err
    assert "\u2026" not in out  # nothing cut short with an ellipsis
    assert "bert-base-squad" in out and "faster" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_significant_only_when_both_tests_agree():
    # B's steps all rank above A's but one is a 5 s outlier: Mann-Whitney U says different, Welch's t-test does not.
    a = [0.100 + 0.0001 * i for i in range(10)]
    b = [0.102 + 0.0001 * i for i in range(9)] + [5.0]
    test = significance(a, b)
    assert test["mannwhitney_p"] < 0.001 and test["welch_p"] > 0.3
    assert test["significant"] is False
    # B's steps straddle A's (half faster, half slower), its mean 5% higher: Welch says different, MWU does not.
    a = [0.100 + 0.0001 * (i % 5) for i in range(20)]
    b = [(0.095 if i < 10 else 0.116) + 0.00001 * i for i in range(20)]
    test = significance(a, b)
    assert test["welch_p"] < 0.05 and test["mannwhitney_p"] > 0.5
    assert test["significant"] is False
