#!/usr/bin/env bash
# Get ready, on this machine, for one call of zoo_rest.sh on the lent GPU machine (README.md).
#
#   scripts/device/prepare_zoo_rest.sh [--deadline S] [--timeout S] [--resume DIR]
#
# 1. lists the `uea10-zoo` runs still missing: those of `ssmbench --suite uea10-zoo grid`
#    without a record in benchmarks/records/uea10_zoo_cpu/<dataset>/<model>/ (ZOO_RECORDS);
#    writes them to .device-data/targets.txt;
# 2. downloads into .whl/ the wheels `ssmbench train` needs and the machine lacks, at the
#    versions .venv has (ZOO_VENV), for its Python 3.12 on x86-64;
# 3. puts the missing runs' datasets into .device-data/uea/<Name>/ as .ts.xz with a
#    SHA256SUMS (the form ssmbench.data.uea.fetch_uea reads from an archive_dir), checked
#    against the archive's own SHA256SUMS first; the archive is the suite's archive_dir
#    (../shared/data/uea) unless ZOO_ARCHIVE names another;
# 4. with --resume DIR (a folder where zoo_rest_ckpt<N>.tgz were unpacked): copies the
#    checkpoints of missing runs found under DIR/checkpoints/ to .device-data/checkpoints/;
# 5. prints the `run` tool's arguments: command (--deadline S, default 470: seconds after
#    the script starts; --timeout S, the call's timeout_s, default 590) and carry.
# .device-data/ and .whl/ are kept out of git by .gitignore. Nothing else is written.
set -euo pipefail

deadline=470 timeout_s=590 resume=""
while (($#)); do
    case $1 in
        --deadline) deadline=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --resume) resume=$2; shift 2 ;;
        -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
        *) echo "prepare_zoo_rest: unknown argument $1" >&2; exit 2 ;;
    esac
done
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
VENV=${ZOO_VENV:-.venv}
RECORDS=${ZOO_RECORDS:-benchmarks/records/uea10_zoo_cpu}
SUITE=uea10-zoo
DATA=.device-data
WHL=.whl
NICE=(nice -n 19)
# packages `ssmbench train` imports that the machine lacks (scripts/device/README.md,
# ../shared/device/README.md); their own needs (attrs, typing-extensions, pyparsing) are there
PACKAGES=(jsonschema referencing jsonschema-specifications rpds-py ptflops pysiglib pydot)

# --- 0. the folders that travel by `carry` must be ignored (else they travel twice)
git check-ignore -q "$DATA/x" || { echo "prepare_zoo_rest: $DATA/ is not ignored by git" >&2; exit 1; }
git check-ignore -q "$WHL/x.whl" || { echo "prepare_zoo_rest: $WHL/ is not ignored by git" >&2; exit 1; }
if git check-ignore -q scripts/device/zoo_rest.sh; then
    echo "prepare_zoo_rest: scripts/device/zoo_rest.sh is ignored: it would not travel" >&2; exit 1
fi

# --- 1. the missing runs
mapfile -t grid < <("${NICE[@]}" "$VENV/bin/ssmbench" --suite "$SUITE" grid)
missing=()
for t in "${grid[@]}"; do
    IFS=/ read -r -a parts <<<"$t"
    n=${#parts[@]}
    [ -f "$RECORDS/${parts[n-3]}/${parts[n-2]}/${parts[n-1]}" ] || missing+=("$t")
done
echo "suite $SUITE: ${#grid[@]} runs, ${#missing[@]} without a record in $RECORDS"
if ((${#missing[@]} == 0)); then echo "nothing to run"; exit 0; fi
printf '%s\n' "${missing[@]}" | awk -F/ '{print $(NF-1) "/" $(NF-2)}' | sort | uniq -c |
    awk '{split($2, a, "/"); m[a[1]] = m[a[1]] " " a[2]; c[a[1]] += $1}
         END {for (k in m) printf "  %-12s %2d:%s\n", k, c[k], m[k]}' | sort
mkdir -p "$DATA"
printf '%s\n' "${missing[@]}" >"$DATA/targets.txt"

# --- 2. wheels, at .venv's versions
mkdir -p "$WHL"
norm() { tr '[:upper:]' '[:lower:]' <<<"$1" | tr '_.' '--'; } # a distribution's name, PEP 503
declare -A want
while IFS='=' read -r name version; do
    key=$(norm "$name")
    want[$key]=$version
done < <("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | sed 's/==/=/')
for p in "${PACKAGES[@]}"; do
    v=${want[$p]:-}
    [ -n "$v" ] || { echo "prepare_zoo_rest: $p is not installed in $VENV" >&2; exit 1; }
    "${NICE[@]}" "$VENV/bin/python" -m pip download -q --no-deps --only-binary=:all: \
        --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
        -d "$WHL" "$p==$v"
done
# one version of each package in .whl/ (two stop the whole install there)
for w in "$WHL"/*.whl; do
    base=${w##*/}
    key=$(norm "${base%%-*}")
    ver=$(cut -d- -f2 <<<"$base")
    if [ -n "${want[$key]:-}" ] && [[ " ${PACKAGES[*]} " == *" $key "* ]]; then
        if [ "$ver" != "${want[$key]}" ]; then rm -v "$w"; fi
    else
        echo "note: $w is not one of ours: it is installed there too"
    fi
done

# --- 3. the datasets of the missing runs, compressed, with their checksums
archive=${ZOO_ARCHIVE:-$("${NICE[@]}" "$VENV/bin/python" -c '
import sys
from ssmbench.config import benchmark_settings, load_params
print(benchmark_settings(load_params("params.yaml", sys.argv[1]), "uea", sys.argv[1])["archive_dir"])
' "$SUITE")}
rm -rf "${DATA:?}/uea"
for ds in $(printf '%s\n' "${missing[@]}" | awk -F/ '{print $(NF-2)}' | sort -u); do
    mkdir -p "$DATA/uea/$ds"
    : >"$DATA/uea/$ds/SHA256SUMS"
    for split in TRAIN TEST; do
        f=${ds}_$split.ts
        sum=$(awk -v p="$ds/$f" '$2 == p {print $1}' "$archive/SHA256SUMS" 2>/dev/null || true)
        [ -n "$sum" ] || sum=$(awk -v p="$f" '$2 == p {print $1}' "$archive/$ds/SHA256SUMS" 2>/dev/null || true)
        [ -n "$sum" ] || { echo "prepare_zoo_rest: no sha256 of $f in $archive" >&2; exit 1; }
        if [ -f "$archive/$ds/$f" ]; then
            got=$(sha256sum "$archive/$ds/$f" | cut -d' ' -f1)
            [ "$got" = "$sum" ] || { echo "prepare_zoo_rest: $archive/$ds/$f: sha256 $got, listed $sum" >&2; exit 1; }
            "${NICE[@]}" xz -9 -T1 -c "$archive/$ds/$f" >"$DATA/uea/$ds/$f.xz"
            [ "$(xz -dc "$DATA/uea/$ds/$f.xz" | sha256sum | cut -d' ' -f1)" = "$sum" ]
        elif [ -f "$archive/$ds/$f.xz" ]; then
            cp "$archive/$ds/$f.xz" "$DATA/uea/$ds/"
        else
            echo "prepare_zoo_rest: no $archive/$ds/$f(.xz)" >&2; exit 1
        fi
        # the decompressed content's sum under the .ts name, the compressed file's own too
        echo "$sum  $f" >>"$DATA/uea/$ds/SHA256SUMS"
        echo "$(sha256sum "$DATA/uea/$ds/$f.xz" | cut -d' ' -f1)  $f.xz" >>"$DATA/uea/$ds/SHA256SUMS"
    done
done
{
    echo "commit $(git rev-parse HEAD), $(git status --porcelain -uno | wc -l) tracked files changed, prepared $(date -u +%FT%TZ)"
} >"$DATA/SOURCE.txt"

# --- 4. checkpoints of earlier cut runs, to resume (torch and code must match: README.md)
rm -rf "${DATA:?}/checkpoints"
if [ -n "$resume" ]; then
    n=0
    for t in "${missing[@]}"; do
        IFS=/ read -r -a parts <<<"$t"
        k=${#parts[@]}
        rel=${parts[k-4]}/${parts[k-3]}/${parts[k-2]}/${parts[k-1]%.json}.pt
        if [ -f "$resume/checkpoints/$rel" ]; then
            mkdir -p "$DATA/checkpoints/${rel%/*}" && cp "$resume/checkpoints/$rel" "$DATA/checkpoints/$rel"
            n=$((n + 1))
        fi
    done
    echo "checkpoints to resume: $n (from $resume/checkpoints)"
fi

# --- 5. sizes and the call
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1)
whl=$(du -sb "$WHL" | cut -f1)
data=$(du -sb "$DATA" | cut -f1)
total=$((tree + whl + data))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "sizes: working tree $(mib "$tree"), $WHL $(mib "$whl") ($(find "$WHL" -type f -name '*.whl' | wc -l) wheels), $DATA $(mib "$data"); together $(mib "$total") of the 64 MiB a call may carry"
((total < 64 * 1048576)) || { echo "prepare_zoo_rest: over 64 MiB" >&2; exit 1; }
cmd="bash scripts/device/zoo_rest.sh --deadline $deadline --targets $DATA/targets.txt"
echo
echo "run tool arguments (${#cmd} characters of command):"
echo "  command:   $cmd"
echo "  carry:     [\"$WHL\", \"$DATA\"]"
echo "  timeout_s: $timeout_s"
echo "Then: results under the reply's files_at (zoo_rest.tgz, zoo_rest_summary.txt, zoo_rest_ckpt<N>.tgz)."
