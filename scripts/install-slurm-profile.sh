#!/usr/bin/env bash
# Install the project's SLURM profile template (profiles/slurm) as the general Snakemake
# profile named `slurm`, so that `snakemake --profile slurm` finds it:
#
#   scripts/install-slurm-profile.sh [--partition NAME] [--account NAME] [--dest DIR] [--force]
#
#   --partition NAME  submit to this partition (default-resources slurm_partition); without
#                     it, jobs go to the cluster's default partition
#   --account NAME    charge jobs to this account (default-resources slurm_account); without
#                     it, the SLURM plugin tries to guess one and says so at each run
#                     (harmless where the cluster needs no account: docs/cluster.md)
#   --dest DIR        where to install (default: ${XDG_CONFIG_HOME:-~/.config}/snakemake/slurm,
#                     the user's profile folder that Snakemake searches)
#   --force           replace an installed profile that differs (it is kept as DIR.bak)
#
# Snakemake resolves `--profile slurm` to ./slurm, then ~/.config/snakemake/slurm, then
# /etc/xdg/snakemake/slurm. The workflow's own profiles/default is applied on top of it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
TEMPLATE=$HERE/profiles/slurm/config.yaml
DEST=${XDG_CONFIG_HOME:-$HOME/.config}/snakemake/slurm
PARTITION=""
ACCOUNT=""
GUESSED="none, the plugin guesses one"
FORCE=0

# the header comment above, up to its first line that is not a comment
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }
while [ $# -gt 0 ]; do
  case $1 in
    --partition) PARTITION=${2:?--partition needs a name}; shift 2 ;;
    --account) ACCOUNT=${2:?--account needs a name}; shift 2 ;;
    --dest) DEST=${2:?--dest needs a folder}; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install-slurm-profile: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -f "$TEMPLATE" ] || { echo "install-slurm-profile: template $TEMPLATE is missing" >&2; exit 1; }
if [ -n "$PARTITION" ] && ! [[ "$PARTITION" =~ ^[A-Za-z0-9_.-]+$ ]]; then
  echo "install-slurm-profile: --partition '$PARTITION' is not a SLURM partition name" >&2
  exit 2
fi
if [ -n "$ACCOUNT" ] && ! [[ "$ACCOUNT" =~ ^[A-Za-z0-9_.-]+$ ]]; then
  echo "install-slurm-profile: --account '$ACCOUNT' is not a SLURM account name" >&2
  exit 2
fi

new=$(mktemp)
trap 'rm -f "$new"' EXIT
if [ -n "$PARTITION" ]; then
  # the template's commented slurm_partition line becomes the setting
  sed -E "s|^  # slurm_partition: NAME .*$|  slurm_partition: $PARTITION|; /^  #  +without it, jobs go/d" \
    "$TEMPLATE" >"$new"
  grep -q "^  slurm_partition: $PARTITION\$" "$new" || {
    echo "install-slurm-profile: no slurm_partition line to fill in $TEMPLATE" >&2
    exit 1
  }
else
  cp "$TEMPLATE" "$new"
fi
if [ -n "$ACCOUNT" ]; then
  # the template's commented slurm_account line becomes the setting
  sed -i -E "s|^  # slurm_account: NAME .*$|  slurm_account: $ACCOUNT|; /^  #  +without it, the plugin guesses/d" "$new"
  grep -q "^  slurm_account: $ACCOUNT\$" "$new" || {
    echo "install-slurm-profile: no slurm_account line to fill in $TEMPLATE" >&2
    exit 1
  }
fi

if [ -f "$DEST/config.yaml" ]; then
  if cmp -s "$new" "$DEST/config.yaml"; then
    echo "install-slurm-profile: $DEST/config.yaml is up to date"
    exit 0
  fi
  if [ "$FORCE" != 1 ]; then
    echo "install-slurm-profile: $DEST/config.yaml exists and differs from the template;" \
      "rerun with --force to replace it (the old folder is kept as $DEST.bak):" >&2
    diff -u "$DEST/config.yaml" "$new" >&2 || true
    exit 1
  fi
  rm -rf "$DEST.bak"
  mv "$DEST" "$DEST.bak"
fi
mkdir -p "$DEST"
cp "$new" "$DEST/config.yaml.tmp"
mv "$DEST/config.yaml.tmp" "$DEST/config.yaml"
echo "install-slurm-profile: installed $DEST/config.yaml" \
  "(partition: ${PARTITION:-the cluster default}; account: ${ACCOUNT:-$GUESSED});" \
  "run: snakemake --profile slurm"
