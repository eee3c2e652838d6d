#!/usr/bin/env bash
# Issue 7's H100 validation matrix, split into steps that each fit one device command (10 minutes).
#
#   bash benchmarks/h100_plan.sh              # list the steps, their expected durations and the sessions
#   bash benchmarks/h100_plan.sh STEP [STEP]  # run steps; each writes $OUT/<step>.json and $OUT/<step>.log
#   DLBENCH_PLAN_DRY=1 bash benchmarks/h100_plan.sh STEP   # same commands on this CPU, tiny flavours, 2 steps
#
# On the lent GPU machine (device tool `run`, carry [".whl"]), first the setup step alone (about 3 minutes; it
# is the fail-fast check, and a device command shows its output only when it ends):
#   bash benchmarks/h100_plan.sh setup
# then the other steps, e.g. `bash benchmarks/h100_plan.sh gpu-tests resnet50-eager`. After a failed setup the
# measurement steps of the same command are not started (PLAN_IGNORE_SETUP=1 runs them anyway; `gpu-tests`
# runs regardless, for its diagnostics). Copy the returned $OUT/*.json into benchmarks/results/h100/ and build
# the table with
#   PYTHONPATH=src python3 benchmarks/h100_collect.py benchmarks/results/h100/*.json
#
# Packages missing on the GPU machine (it has Python 3.12, torch 2.11, torchvision 0.26, transformers 5.17,
# typer, rich, nvidia-ml-py, matplotlib, jinja2, numpy; no package registry) travel as wheels in .whl/ (ignored
# by git). To re-download them here, in the repository root:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
#     sqlalchemy==2.1.9 alembic==1.20.1 mako==1.4.3 markupsafe==3.0.4 platformdirs==4.14.7 \
#     typing-extensions==4.16.0 pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 pytest-timeout==2.4.0 \
#     packaging==26.3 pygments==2.21.0
# (the store: SQLAlchemy, Alembic, its Mako templates and their MarkupSafe, typing-extensions >= 4.12 for
# Alembic; platformdirs; pytest and what it needs, for `gpu-tests`: 12 wheels, 7 MB). Every step installs them
# into /tmp/site, ahead of the machine's own packages (with pip; by unpacking them where there is no pip).
#
# Budget: each step's run is wrapped in `timeout -s INT` (PLAN_STEP_LIMIT_S, default 560 s, and never past
# PLAN_COMMAND_LIMIT_S, default 580 s, counted from the start of this invocation), so a step that runs long is
# interrupted like Ctrl-C and still writes the partial result JSON before the device's 600 s kill; a step with
# under a minute left is not started.
# Every compiled configuration compiles cold (measure.py uses fresh Inductor/Triton caches), so compile steps
# hold at most two compiled configurations. The GPU cooling wait is capped at PLAN_MAX_WAIT_S (default 45 s)
# per configuration instead of 300 s: the start temperature is recorded in every result either way.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DRY="${DLBENCH_PLAN_DRY:-0}"
PY="${PLAN_PYTHON:-python3}"
STEP_LIMIT_S="${PLAN_STEP_LIMIT_S:-560}"
COMMAND_LIMIT_S="${PLAN_COMMAND_LIMIT_S:-580}"  # all steps of one invocation together (device: 600 s)
START_EPOCH="$(date +%s)"
CONFIG_TIMEOUT_S="${PLAN_CONFIG_TIMEOUT_S:-420}"
MAX_WAIT_S="${PLAN_MAX_WAIT_S:-45}"
if [[ "$DRY" == "1" ]]; then
  OUT="${OUT:-/tmp/dlbench-plan-dry}"
fi
export DLBENCH_HOME="${DLBENCH_HOME:-/tmp/dlbench-plan-home}"  # the store of this machine, not under $OUT

# step name | expected minutes on an H100 SXM 80GB (estimates, not measurements) | what it runs
STEPS=(
  "setup|3|nvidia-smi; gpu_smoke.py: versions, CUDA ops, NVML, tiny training of every path; doctor; tiny run"
  "gpu-tests|3|pytest -m gpu (CUDA events, memory, compile default/reduce-overhead, NVML), engine CPU tests"
  "resnet50-eager|5|resnet50 x tf32, amp-fp16, amp-bf16 x eager"
  "resnet50-compile-tf32|4|resnet50 x tf32 x compile default (cold compile)"
  "resnet50-compile-amp|4|resnet50 x amp-fp16 x compile default (cold compile)"
  "bert-base-squad-eager|4|bert-base-squad (seq 384) x tf32, amp-fp16, amp-bf16 x eager"
  "bert-base-squad-compile|5|bert-base-squad x tf32, amp-fp16 x compile default"
  "bert-large-squad-eager|5|bert-large-squad (seq 384) x tf32, amp-fp16, amp-bf16 x eager"
  "bert-large-squad-compile-tf32|4|bert-large-squad x tf32 x compile default"
  "bert-large-squad-compile-amp|4|bert-large-squad x amp-fp16 x compile default"
  "bert-large-mlm-eager|4|bert-large-mlm seq 128 x tf32, amp-fp16, amp-bf16 x eager"
  "bert-large-mlm-compile|6|bert-large-mlm seq 128 x amp-fp16, amp-bf16 x compile default"
  "fp32-resnet50-bert-base|5|resnet50, bert-base-squad x fp32 (strict, TF32 off) x eager"
  "fp32-bert-large|5|bert-large-squad x fp32 x eager"
  "auto-resnet50|7|resnet50 amp-fp16 eager --batch-size auto (5 warm-up, 20 steps x 3)"
  "auto-bert-base-squad|7|bert-base-squad amp-fp16 eager --batch-size auto (5 warm-up, 20 steps x 3)"
  "auto-bert-large-squad|7|bert-large-squad amp-fp16 eager --batch-size auto (5 warm-up, 20 steps x 3)"
  "auto-bert-large-mlm|7|bert-large-mlm seq 128 amp-fp16 eager --batch-size auto (5 warm-up, 20 steps x 3)"
  "cuda-graphs|6|resnet50, bert-base-squad x amp-bf16 x compile reduce-overhead (CUDA graphs; optional)"
  "generate-8b|6|--scenario generate llama-3.1-8b bf16 bs1 pp512/tg128 x eager, compile reduce-overhead"
  "generate-1b|4|--scenario generate llama-3.2-1b bf16 bs1 pp512/tg128 x eager, compile reduce-overhead"
)

# Device sessions (30 minutes of device time each, a machine start included): one line per command.
SESSIONS=(
  "session 1: setup | gpu-tests resnet50-eager | bert-large-mlm-eager resnet50-compile-tf32 | resnet50-compile-amp"
  "session 2: bert-large-squad-eager bert-large-squad-compile-tf32 | bert-large-squad-compile-amp fp32-bert-large | bert-large-mlm-compile"
  "session 3: bert-base-squad-eager bert-base-squad-compile | fp32-resnet50-bert-base | auto-resnet50"
  "session 4: auto-bert-base-squad | auto-bert-large-squad | auto-bert-large-mlm"
  "session 5 (optional): cuda-graphs"
  "session 6 (issue 13, generation): generate-8b | generate-1b"
)

list_steps() {
  echo "usage: bash benchmarks/h100_plan.sh STEP [STEP...]   (DLBENCH_PLAN_DRY=1: on this CPU, tiny)"
  echo
  printf '%-30s %8s  %s\n' "step" "~minutes" "runs"
  for entry in "${STEPS[@]}"; do
    IFS='|' read -r name minutes what <<<"$entry"
    printf '%-30s %8s  %s\n' "$name" "$minutes" "$what"
  done
  echo
  echo "Group steps into commands of at most ~9 expected minutes; suggested device sessions:"
  for line in "${SESSIONS[@]}"; do echo "  $line"; done
}

is_step() {
  local entry
  for entry in "${STEPS[@]}"; do
    [[ "${entry%%|*}" == "$1" ]] && return 0
  done
  return 1
}

preamble() {
  cd "$ROOT"
  mkdir -p "$OUT"
  rm -f "$OUT/setup.failed"
  export PYTHONPATH="$ROOT/src"
  export DLBENCH_DEBUG=1  # the workers' stderr (a failed configuration's traceback) goes into the step's log
  if [[ "$DRY" != "1" ]]; then
    shopt -s nullglob
    local wheels=(.whl/*.whl)
    shopt -u nullglob
    if ((${#wheels[@]})); then
      if "$PY" -m pip --version >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
          "${wheels[@]}"
      else  # a wheel is a zip archive laid out as site-packages expects it
        echo "note: $PY has no pip; unpacking the carried wheels into /tmp/site"
        "$PY" -c 'import sys, zipfile
for wheel in sys.argv[1:]:
    zipfile.ZipFile(wheel).extractall("/tmp/site")' "${wheels[@]}"
      fi
      export PYTHONPATH="$ROOT/src:/tmp/site"
      echo "${#wheels[@]} carried wheels installed into /tmp/site"
    else
      echo "note: no .whl/*.whl carried; sqlalchemy, alembic, mako, platformdirs and pytest must be installed"
    fi
  fi
}

# dlbench STEP ARGS...: `dlbench run ARGS` with the plan's common options, JSON to $OUT/STEP.json.
dlbench_run() {
  local step="$1"
  shift
  local args=()
  local a
  for a in "$@"; do
    if [[ "$DRY" == "1" && "${DLBENCH_PLAN_DRY_COMPILE:-0}" != "1" && "$a" == "default" ]]; then
      a="off"  # compiling on the 2-core CPU takes minutes; DLBENCH_PLAN_DRY_COMPILE=1 keeps it
    elif [[ "$DRY" == "1" && "${DLBENCH_PLAN_DRY_AUTO:-0}" != "1" && "$a" == "auto" ]]; then
      a="2"  # the CPU search doubles up to 4096; DLBENCH_PLAN_DRY_AUTO=1 keeps --batch-size auto
    elif [[ "$DRY" == "1" && "$a" == "reduce-overhead" ]]; then
      a="off"  # CUDA graphs need a GPU (dlbench would record the configuration as skipped)
    fi
    args+=("$a")
  done
  if [[ "$DRY" == "1" ]]; then
    args+=(--device cpu --tiny --warmup 1 --steps 2 --repeats 2)
  else
    args+=(--device cuda --max-wait "$MAX_WAIT_S")
  fi
  args+=(--timeout "$CONFIG_TIMEOUT_S" --quiet --json "$OUT/$step.json")
  local left=$((COMMAND_LIMIT_S - ($(date +%s) - START_EPOCH)))
  local limit=$((left < STEP_LIMIT_S ? left : STEP_LIMIT_S))
  if ((limit < 60)); then
    echo "step $step: not started, only ${left} s left of this command's ${COMMAND_LIMIT_S} s"
    return 0
  fi
  echo "+ dlbench run ${args[*]}   (interrupted after ${limit} s)"
  local rc=0
  timeout -s INT -k 30 "$limit" "$PY" -m dlbench run "${args[@]}" || rc=$?
  echo "step $step: dlbench run exit code $rc (0 ok, 1 some configuration failed, 130 interrupted at the limit)"
  return 0
}

step_setup() {
  local failed=()
  if [[ "$DRY" != "1" ]]; then
    nvidia-smi || failed+=("nvidia-smi")
    # Read-only queries (nothing is changed); long, so into a file of their own.
    nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE >"$OUT/setup-nvidia-smi.txt" 2>&1 || true
  fi
  # 1. One process, about a minute: versions, CUDA ops, NVML, tiny training of every workload x precision (a
  #    traceback for each failure), then two compiled configurations (cold compiles, tens of seconds each).
  local smoke=(--device cuda --compile default --expect-all)
  if [[ "$DRY" == "1" ]]; then
    smoke=(--device cpu)  # the CPU refuses tf32: no --expect-all
    [[ "${DLBENCH_PLAN_DRY_COMPILE:-0}" == "1" ]] && smoke+=(--compile default)
  fi
  # A hang (a driver problem) must not take the whole 10-minute command: each part has a time limit.
  local rc=0
  timeout -k 10 "${PLAN_SMOKE_LIMIT_S:-300}" "$PY" benchmarks/gpu_smoke.py "${smoke[@]}" || rc=$?
  ((rc == 0)) || failed+=("gpu_smoke.py (exit code $rc; 124: still running after ${PLAN_SMOKE_LIMIT_S:-300} s)")
  # 2. dlbench doctor: the machine checks, as JSON for the record and one line each here.
  timeout -k 10 120 "$PY" -m dlbench doctor --json >"$OUT/setup-doctor.json" || true  # 1: a check warns/fails
  "$PY" benchmarks/h100_plan_check.py doctor "$OUT/setup-doctor.json" || failed+=("dlbench doctor")
  # 3. The CLI path: planning child, a worker process per configuration, telemetry, thermometer, store, --json.
  local CONFIG_TIMEOUT_S=180 MAX_WAIT_S=0  # read by dlbench_run (bash's dynamic scope)
  local cli=(-w resnet50 -w bert-base-squad -p tf32 -p amp-fp16 -c off)
  [[ "$DRY" != "1" ]] && cli+=(--tiny --warmup 1 --steps 3 --repeats 2)
  dlbench_run setup-smoke "${cli[@]}"
  local check=(run "$OUT/setup-smoke.json")
  [[ "$DRY" == "1" ]] && check+=(--allow-skipped)
  "$PY" benchmarks/h100_plan_check.py "${check[@]}" || failed+=("dlbench run (setup-smoke.json)")
  if ((${#failed[@]})); then
    printf '%s\n' "${failed[@]}" >"$OUT/setup.failed"
    echo "SETUP FAILED: ${failed[*]} (details above); measurement steps of this command are not started"
  else
    echo "SETUP OK"
  fi
}

step_gpu_tests() {
  local rc=0
  "$PY" -m pytest -q -m gpu -p no:cacheprovider -rs tests/test_measure.py tests/test_telemetry.py \
    tests/test_catalog.py tests/test_multigpu_gpu.py || rc=$?
  echo "gpu tests exit code $rc (5 = none collected)"
  # The CPU tests of the engine too: they check the GPU image's torch / transformers / typer versions.
  rc=0
  # tests/test_gpu_paths.py pins this torch's TF32 flag behaviour (legacy/new API) and GradScaler + fused.
  "$PY" -m pytest -q -m "not gpu" -p no:cacheprovider tests/test_workloads.py tests/test_measure.py \
    tests/test_gpu_paths.py tests/test_telemetry.py tests/test_h100_collect.py tests/test_cli_basics.py || rc=$?
  echo "engine CPU tests on this image: exit code $rc"
}

run_step() {
  local step="$1"
  local compile_default=(-c default)
  case "$step" in
    setup) step_setup ;;
    gpu-tests) step_gpu_tests ;;
    resnet50-eager) dlbench_run "$step" -w resnet50 -p tf32 -p amp-fp16 -p amp-bf16 -c off ;;
    resnet50-compile-tf32) dlbench_run "$step" -w resnet50 -p tf32 "${compile_default[@]}" ;;
    resnet50-compile-amp) dlbench_run "$step" -w resnet50 -p amp-fp16 "${compile_default[@]}" ;;
    bert-base-squad-eager) dlbench_run "$step" -w bert-base-squad -p tf32 -p amp-fp16 -p amp-bf16 -c off ;;
    bert-base-squad-compile) dlbench_run "$step" -w bert-base-squad -p tf32 -p amp-fp16 "${compile_default[@]}" ;;
    bert-large-squad-eager) dlbench_run "$step" -w bert-large-squad -p tf32 -p amp-fp16 -p amp-bf16 -c off ;;
    bert-large-squad-compile-tf32) dlbench_run "$step" -w bert-large-squad -p tf32 "${compile_default[@]}" ;;
    bert-large-squad-compile-amp) dlbench_run "$step" -w bert-large-squad -p amp-fp16 "${compile_default[@]}" ;;
    bert-large-mlm-eager)
      dlbench_run "$step" -w bert-large-mlm --seq-len 128 -p tf32 -p amp-fp16 -p amp-bf16 -c off ;;
    bert-large-mlm-compile)
      dlbench_run "$step" -w bert-large-mlm --seq-len 128 -p amp-fp16 -p amp-bf16 "${compile_default[@]}" ;;
    fp32-resnet50-bert-base) dlbench_run "$step" -w resnet50 -w bert-base-squad -p fp32 -c off ;;
    fp32-bert-large) dlbench_run "$step" -w bert-large-squad -p fp32 -c off ;;
    auto-resnet50 | auto-bert-base-squad | auto-bert-large-squad | auto-bert-large-mlm)
      local workload="${step#auto-}"
      local extra=()
      [[ "$workload" == "bert-large-mlm" ]] && extra=(--seq-len 128)
      dlbench_run "$step" -w "$workload" "${extra[@]}" -p amp-fp16 -c off --batch-size auto \
        --warmup 5 --steps 20 --repeats 3 ;;
    cuda-graphs) dlbench_run "$step" -w resnet50 -w bert-base-squad -p amp-bf16 -c reduce-overhead ;;
    # Generation (docs/generate.md): targets decode >= 80% of the bandwidth roofline, prefill >= 55% MFU. The
    # compiled configuration compiles the decode step cold (a minute or two) before its 2 + 5 generations.
    generate-8b | generate-1b)
      local model=llama-3.1-8b
      [[ "$step" == "generate-1b" ]] && model=llama-3.2-1b
      dlbench_run "$step" --scenario generate -w "$model" -p bf16 -c off -c reduce-overhead -b 1 \
        --prompt-len 512 --new-tokens 128 ;;
    *) echo "unknown step $step" >&2; return 2 ;;
  esac
}

if (($# == 0)); then
  list_steps
  exit 0
fi
for step in "$@"; do
  if ! is_step "$step"; then
    echo "error: unknown step '$step'" >&2
    list_steps >&2
    exit 2
  fi
done
if [[ -z "${OUT:-}" ]]; then
  echo "error: \$OUT is not set (the device tool sets it; here use DLBENCH_PLAN_DRY=1 or OUT=DIR)" >&2
  exit 2
fi
preamble
for step in "$@"; do
  if [[ -s "$OUT/setup.failed" && "$step" != "setup" && "$step" != "gpu-tests" && "${PLAN_IGNORE_SETUP:-0}" != "1" ]]
  then
    echo "=== step $step not started: setup failed ($(paste -sd ';' "$OUT/setup.failed")); PLAN_IGNORE_SETUP=1 runs it ==="
    continue
  fi
  echo "=== step $step ($(date -u +%H:%M:%S) UTC) ==="
  start=$SECONDS
  set -o pipefail
  run_step "$step" 2>&1 | tee "$OUT/$step.log"
  echo "=== step $step done in $((SECONDS - start)) s ==="
done
