#!/usr/bin/env bash
# Finish runs of the `uea10-zoo` suite on the lent GPU machine, in one call (README.md here).
#
#   bash scripts/device/zoo_rest.sh --deadline SECONDS [--targets FILE] [TARGET...]
#
# TARGET: a run record path as `ssmbench --suite uea10-zoo grid` prints it
# (results/runs/uea/PenDigits/Transformer/fold0.json); FILE: one a line (# comments).
# --deadline: seconds after this script starts (or @EPOCH, absolute) at which every run
# still training gets SIGTERM: it checkpoints and exits 75 (ssmbench.train.stop); a run
# not started by then is not started. Packing follows, so leave it a minute of the call.
#
# Runs from the repository root of the copy of the working tree. Reads .whl/ (wheels the
# machine lacks) and $ZOO_DATA (default .device-data: uea/<Name>/ compressed .ts files
# with their SHA256SUMS, made by prepare_zoo_rest.sh) and puts the datasets where the
# suite's archive_dir (../shared/data/uea) says, relative to the root, so the records
# hold the same settings as those made here; then the project's own commands: fetch,
# prepare, train (one process a run, $ZOO_GPU_JOBS and $ZOO_CPU_JOBS side by side).
# Writes into $OUT: zoo_rest.tgz (records with curve and test scores, logs, summary),
# zoo_rest_ckpt<N>.tgz (checkpoints of cut runs, if any) and zoo_rest_summary.txt.
#
# Environment (all optional):
#   PYTHON            the interpreter (python3)
#   OUT               where the results go (required; the device tool sets it)
#   ZOO_MAX_EPOCHS    pass --max-epochs N to train (smoke tests only: records made so
#                     are not the suite's)
#   ZOO_GPU_DATASETS  datasets whose runs use the GPU, space separated, or `all`
#                     (default: PenDigits StandWalkJump AtrialFibrillation
#                     FingerMovements NATOPS); the others run as CPU processes, with
#                     CUDA_VISIBLE_DEVICES= (the project has no device setting: a run
#                     takes CUDA when torch sees it; the record keeps device and
#                     cuda_visible_devices)
#   ZOO_GPU_JOBS      GPU runs side by side (8)
#   ZOO_CPU_JOBS      CPU runs side by side (CPU cores less ZOO_GPU_JOBS, at least 1)
#   ZOO_THREADS       --threads of each run (1)
#   ZOO_ORDER         datasets, first started first (longest runs first)
#   ZOO_GRACE         seconds between SIGTERM and SIGKILL (45)
#   ZOO_MIN_START     a run is not started with fewer seconds than this left (20)
#   ZOO_DATA          the carried data folder (.device-data)
set -uo pipefail

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }

deadline="" targets_file="" targets=()
while (($#)); do
    case $1 in
        --deadline) deadline=${2:-}; shift 2 || exit 2 ;;
        --targets) targets_file=${2:-}; shift 2 || exit 2 ;;
        -h | --help) usage; exit 0 ;;
        --*) echo "zoo_rest: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done

cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
START=$(date +%s)
case $deadline in
    @[0-9]*) END=${deadline#@} ;;
    [0-9]*) END=$((START + deadline)) ;;
    *) echo "zoo_rest: --deadline SECONDS (or @EPOCH) is required" >&2; exit 2 ;;
esac
if [ -z "${OUT:-}" ]; then echo "zoo_rest: OUT is not set" >&2; exit 2; fi
mkdir -p "$OUT" || exit 2
if [ -n "$targets_file" ]; then
    [ -f "$targets_file" ] || { echo "zoo_rest: no file $targets_file" >&2; exit 2; }
    while read -r line; do
        line=${line%%#*}; line=${line//[[:space:]]/}
        [ -n "$line" ] && targets+=("$line")
    done <"$targets_file"
fi
((${#targets[@]})) || { echo "zoo_rest: no targets" >&2; exit 2; }

PYTHON=${PYTHON:-python3}
SUITE=uea10-zoo
DATA=${ZOO_DATA:-.device-data}
CORES=$(getconf _NPROCESSORS_ONLN) # not nproc: it reports OMP_NUM_THREADS when set
GPU_JOBS=${ZOO_GPU_JOBS:-8}
CPU_JOBS=${ZOO_CPU_JOBS:-$((CORES > GPU_JOBS ? CORES - GPU_JOBS : 1))}
THREADS=${ZOO_THREADS:-1}
GRACE=${ZOO_GRACE:-45}
MIN_START=${ZOO_MIN_START:-20}
GPU_DATASETS=${ZOO_GPU_DATASETS:-PenDigits StandWalkJump AtrialFibrillation FingerMovements NATOPS}
ORDER=${ZOO_ORDER:-PenDigits StandWalkJump FingerMovements NATOPS JapaneseVowels RacketSports AtrialFibrillation Libras BasicMotions ERing}
WORK=$(mktemp -d /tmp/zoo_rest.XXXXXX)
STATUS=$WORK/status
: >"$STATUS"
say() { echo "zoo_rest $(date -u +%H:%M:%S) +$(($(date +%s) - START))s: $*"; }
say "root $ROOT, ${#targets[@]} targets, $CORES CPUs, deadline in $((END - START)) s"

# --- 1. packages the machine lacks (.whl/, see README.md), unless already importable.
# Needed by every run: jsonschema (params.yaml's schema) and its needs, ptflops (a record's
# MMac); pysiglib (Log-NCDE, RFormer) and pydot are imported by no run of this suite.
NEEDED="jsonschema, referencing, jsonschema_specifications, rpds, ptflops"
if "$PYTHON" -c "import $NEEDED, pysiglib, pydot" 2>/dev/null; then
    export PYTHONPATH=$ROOT/src${PYTHONPATH:+:$PYTHONPATH}
    say "packages already importable: no wheels installed"
else
    if ! compgen -G ".whl/*.whl" >/dev/null; then
        echo "zoo_rest: $NEEDED not all importable and no .whl/*.whl (carry .whl)" >&2; exit 3
    fi
    "$PYTHON" -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 3
    export PYTHONPATH=/tmp/site:$ROOT/src
    "$PYTHON" -c "import $NEEDED" || { echo "zoo_rest: wheels installed but not importable" >&2; exit 3; }
    for m in pysiglib pydot; do
        "$PYTHON" -c "import $m" 2>/dev/null || say "warning: $m does not import (no run of this suite needs it)"
    done
    say "wheels installed into /tmp/site"
fi
export PYTHON SUITE END GRACE MIN_START THREADS STATUS
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1

# --- 2. where the project puts things, and the targets' datasets (params.yaml, the suite)
datasets=$(printf '%s\n' "${targets[@]}" | awk -F/ '{print $(NF-3) "/" $(NF-2)}' | sort -u)
# shellcheck disable=SC2086 # one word a dataset
if ! cfg=$("$PYTHON" - "$SUITE" $datasets <<'EOF'
import sys
from ssmbench.config import benchmark_settings, load_params
suite, pairs = sys.argv[1], sys.argv[2:]
p = load_params("params.yaml", suite)
print(p["paths"]["runs"], p["paths"]["checkpoints"], p["paths"]["logs"])
for pair in pairs:
    bench, ds = pair.split("/")
    print(bench, ds, benchmark_settings(p, bench, suite, ds).get("archive_dir") or "-")
EOF
); then
    echo "zoo_rest: cannot read params.yaml for suite $SUITE" >&2; exit 3
fi
read -r RUNS CKPTS LOGS <<<"$(head -n1 <<<"$cfg")"
LOGDIR=$LOGS/device
mkdir -p "$LOGDIR/data"
export RUNS CKPTS LOGDIR

# checkpoints of an earlier call's cut runs (README.md: resuming), if carried
if [ -d "$DATA/checkpoints" ]; then
    mkdir -p "$CKPTS" && cp -rn "$DATA/checkpoints/." "$CKPTS/" && say "checkpoints from $DATA/checkpoints put in $CKPTS"
fi

# --- 3. data: the carried archive files where archive_dir says, then fetch + prepare
prep_one() { # bench dataset archive_dir
    local bench=$1 ds=$2 arch=$3 log=$LOGDIR/data/$2.log
    {
        if [ "$arch" != "-" ]; then
            if compgen -G "$arch/$ds/${ds}_TRAIN.ts*" >/dev/null && compgen -G "$arch/$ds/${ds}_TEST.ts*" >/dev/null; then
                echo "archive_dir $arch/$ds already holds the files: used as they are"
            elif [ -d "$DATA/$bench/$ds" ]; then
                mkdir -p "$arch/$ds" && cp -p "$DATA/$bench/$ds/"* "$arch/$ds/" && echo "copied $DATA/$bench/$ds to $arch/$ds"
            else
                echo "no $DATA/$bench/$ds to put in $arch/$ds"
            fi
        fi
        "$PYTHON" -m ssmbench --suite "$SUITE" fetch --benchmark "$bench" --dataset "$ds" &&
            "$PYTHON" -m ssmbench --suite "$SUITE" prepare --benchmark "$bench" --dataset "$ds"
    } >"$log" 2>&1
    echo "$bench/$ds $?" >>"$WORK/data_status"
}
export -f prep_one
export DATA WORK
# archive_dir is relative to the root (../shared/data/uea): it must be possible to make it
for arch in $(tail -n +2 <<<"$cfg" | awk '$3 != "-" {print $3}' | sort -u); do
    mkdir -p "$arch" || { echo "zoo_rest: cannot make archive_dir $arch (from $ROOT)" >&2; exit 3; }
done
: >"$WORK/data_status"
tail -n +2 <<<"$cfg" | CUDA_VISIBLE_DEVICES='' xargs -r -P "$CORES" -L 1 bash -c 'prep_one "$@"' _
bad_data=$(awk '$2 != 0 {print $1}' "$WORK/data_status")
say "data ready: $(awk '$2 == 0' "$WORK/data_status" | wc -l) of $(wc -l <"$WORK/data_status") datasets${bad_data:+; FAILED: $bad_data (logs/device/data/)}"

# --- 4. the runs: one process each, GPU and CPU queues side by side, longest first
run_one() { # device target
    local dev=$1 t=$2 bench ds model fold base rest log t0 rc secs state
    base=${t%.json}; fold=${base##*/fold}; rest=${base%/*}
    model=${rest##*/}; rest=${rest%/*}; ds=${rest##*/}; rest=${rest%/*}; bench=${rest##*/}
    local left=$((END - $(date +%s)))
    if ((left < MIN_START)); then
        echo "$t $dev not-started - 0" >>"$STATUS"; return 0
    fi
    log=$LOGDIR/$bench/$ds/$model/fold$fold.log
    mkdir -p "${log%/*}"
    local envs=()
    [ "$dev" = cpu ] && envs=(CUDA_VISIBLE_DEVICES=)
    t0=$(date +%s)
    timeout --preserve-status -s TERM -k "$GRACE" "$left" env "${envs[@]}" \
        "$PYTHON" -m ssmbench --suite "$SUITE" train --benchmark "$bench" --dataset "$ds" \
        --model "$model" --fold "$fold" --record "$t" --threads "$THREADS" \
        ${ZOO_MAX_EPOCHS:+--max-epochs "$ZOO_MAX_EPOCHS"} >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    if ((rc == 0)) && [ -f "$t" ]; then state=finished
    elif ((rc == 75)); then state="cut"
    elif ((rc == 137)); then state=killed
    else state=failed; fi
    echo "$t $dev $state $rc $secs" >>"$STATUS"
    echo "zoo_rest $(date -u +%H:%M:%S): $t ($dev) $state rc=$rc ${secs}s"
}
export -f run_one
export ZOO_MAX_EPOCHS=${ZOO_MAX_EPOCHS:-}

rank() { # dataset -> its place in ORDER (99 when not named)
    local i=0 d
    for d in $ORDER; do [ "$d" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done
    echo 99
}
on_gpu() { [ "$GPU_DATASETS" = all ] || [[ " $GPU_DATASETS " == *" $1 "* ]]; }
: >"$WORK/gpu" ; : >"$WORK/cpu"
i=0
for t in "${targets[@]}"; do
    i=$((i + 1))
    ds=$(awk -F/ '{print $(NF-2)}' <<<"$t"); bench=$(awk -F/ '{print $(NF-3)}' <<<"$t")
    if [[ " $bad_data " == *" $bench/$ds "* ]]; then
        echo "$t - no-data - 0" >>"$STATUS"; continue
    fi
    if on_gpu "$ds"; then q=gpu; else q=cpu; fi
    printf '%02d %03d %s\n' "$(rank "$ds")" "$i" "$t" >>"$WORK/$q"
done
GPU_SEEN=$("$PYTHON" -c 'import torch; print(torch.cuda.is_available())' 2>/dev/null)
[ "$GPU_SEEN" = True ] || say "warning: torch sees no CUDA device: the GPU queue runs on the CPU"
say "queues: $(wc -l <"$WORK/gpu") GPU runs, $GPU_JOBS at a time; $(wc -l <"$WORK/cpu") CPU runs, $CPU_JOBS at a time"
# load and GPU use every 15 s, for sizing the queues next time (logs/device/load.txt)
(
    s=""
    trap 'kill $s 2>/dev/null; exit 0' TERM
    while :; do
        echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) gpu% MiB $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits 2>/dev/null | head -n1)"
        sleep 15 & s=$!; wait "$s"
    done
) >>"$LOGDIR/load.txt" 2>/dev/null &
sampler_pid=$!
sort "$WORK/gpu" | awk '{print $3}' | xargs -r -P "$GPU_JOBS" -L 1 bash -c 'run_one gpu "$@"' _ &
gpu_pid=$!
sort "$WORK/cpu" | awk '{print $3}' | xargs -r -P "$CPU_JOBS" -L 1 bash -c 'run_one cpu "$@"' _ &
cpu_pid=$!
wait "$gpu_pid" "$cpu_pid"
kill "$sampler_pid" 2>/dev/null
say "runs over"

# --- 5. summary and packing into $OUT (at most 8 files of 16 MiB come back)
SUMMARY=$OUT/zoo_rest_summary.txt
{
    echo "zoo_rest.sh on $(hostname), $(date -u +%FT%TZ); suite $SUITE; deadline $((END - START)) s after start"
    [ -f "$DATA/SOURCE.txt" ] && sed 's/^/source: /' "$DATA/SOURCE.txt"
    echo "gpu: $(nvidia-smi -L 2>/dev/null | head -n1 || echo none); torch sees CUDA: ${GPU_SEEN:-?}"
    echo "versions: $("$PYTHON" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)' 2>/dev/null)"
    echo "queues: GPU ($GPU_JOBS at a time): $GPU_DATASETS; CPU ($CPU_JOBS at a time): the rest; threads $THREADS${ZOO_MAX_EPOCHS:+; max epochs $ZOO_MAX_EPOCHS (smoke test)}"
    echo "data: $(tr '\n' ' ' <"$WORK/data_status")"
    echo "counts: $(awk '{print $3}' "$STATUS" | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}')"
    echo
    echo "target device state rc seconds"
    sort "$STATUS"
} >"$SUMMARY"

# checkpoints of runs not finished: in parts of at most 15 MiB, 4 parts at most (56 MiB)
part=0 size=0 total=0 cap=$((15 * 1024 * 1024)) left_behind=()
: >"$WORK/ckpt_list"
while read -r t _ state _; do
    [ "$state" = finished ] && continue
    rel=${t#"$RUNS"/}
    ck=$CKPTS/${rel%.json}.pt
    [ -f "$ck" ] && echo "$(stat -c %s "$ck") $ck" >>"$WORK/ckpt_list"
done <"$STATUS"
while read -r bytes ck; do
    if ((part == 0 || size + bytes > cap)); then
        if ((part == 4 || bytes > cap || total + bytes > 56 * 1024 * 1024)); then
            left_behind+=("$ck"); continue
        fi
        part=$((part + 1)); size=0
    fi
    echo "$ck" >>"$WORK/ckpt_part$part"; size=$((size + bytes)); total=$((total + bytes))
done < <(sort -n "$WORK/ckpt_list")
{
    echo
    echo "checkpoints of unfinished runs: $(wc -l <"$WORK/ckpt_list"), packed in $part part(s) (zoo_rest_ckpt<N>.tgz)"
    for ck in "${left_behind[@]}"; do echo "left behind (size limits): $ck"; done
} >>"$SUMMARY"
for ((p = 1; p <= part; p++)); do
    tar -czf "$OUT/zoo_rest_ckpt$p.tgz" -T "$WORK/ckpt_part$p" || say "warning: tar of checkpoints part $p failed"
done

# the records (each with its curve and test scores), the logs and the summary: one .tgz
files=()
while read -r t _ state _; do
    base=${t%.json}
    for f in "$t" "$base.curve.csv" "$base.test_scores.csv"; do [ -f "$f" ] && files+=("$f"); done
done <"$STATUS"
cp "$SUMMARY" "$LOGDIR/zoo_rest_summary.txt"
tar -czf "$OUT/zoo_rest.tgz" "${files[@]}" "$LOGDIR" || say "warning: tar of the records failed"
say "packed: $(find "$OUT" -maxdepth 1 -type f -printf '%f %s; ')"
cat "$SUMMARY"
rm -rf "$WORK"
