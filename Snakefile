# ssmbench workflow: wiring only. The grid, paths and resources come from params.yaml.
#   snakemake --cores all                       # the suite named in params.yaml (default)
#   snakemake --cores all --config suite=uea10  # another suite
#   snakemake --cores all --config max_epochs=5 # a training setting over params.yaml's
#   snakemake --profile slurm                   # on a SLURM cluster (docs/cluster.md)
import sys

from snakemake.utils import min_version, update_config

from ssmbench.dvc_params import check_studies_tracked
from ssmbench.project_lock import hold_for_snakemake
from ssmbench.params_file import ConfigError, read_params_and_files, validate_schema
from ssmbench.precedence import COMMAND_LINE_KEYS

min_version("9.0")

# One run at a time in this folder (docs/development.md#one-run-at-a-time): the main
# process takes the project lock .ssmbench/project.lock before Snakemake touches
# .snakemake/locks, or exits naming the process that holds it. Jobs (Snakemake parses this
# file in each), dry runs, --unlock and --nolock take none.
hold_for_snakemake(workflow.is_main_process)


# params.yaml is read by ssmbench's reader rather than `configfile:`, so that a YAML
# syntax error, a duplicated key or an empty file gets the message `ssmbench check`
# gives (file, line, key); `--config` / `--configfile` values from the command line,
# already in `config`, override the file as they would a configfile.
_params, _files = read_params_and_files("params.yaml")
# the suite params.yaml names, before --config overrides it: the one `dvc repro` runs, whose
# report is DVC's (results/, figures/); any other suite reports into results/suites/<suite>/
# (ssmbench.report.outputs.report_dirs)
PARAMS_SUITE = _params.get("suite")
# A training setting given as --config KEY=VALUE (max_epochs=5) is a command-line setting
# (ssmbench.precedence: over every place of params.yaml, "command line" in `explain` and in
# the records); the jobs get it as `ssmbench --set` (common.smk: cli).
_command_line = {k: config.pop(k) for k in list(config) if k in COMMAND_LINE_KEYS}
# --config replace=true: a suite may replace records another suite made with other
# settings (common.smk refuses that otherwise)
REPLACE_RECORDS = bool(config.pop("replace", False))
_unknown = sorted(set(config) - set(_params) - {"suite", "command_line"})
if _unknown:
    raise ConfigError(
        f"snakemake --config {_unknown[0]}=...: {_unknown[0]!r} is neither a training setting "
        f"({', '.join(sorted(COMMAND_LINE_KEYS))}) nor a key of params.yaml "
        f"({', '.join(sorted(_params))}); a model's hyperparameters change under a name of "
        "their own: a variant (base: <model>, docs/protocol.md)"
    )
if _command_line:
    config["command_line"] = {**(config.get("command_line") or {}), **_command_line}
update_config(_params, config)
config.update(_params)
if workflow.is_main_process and config.get("command_line"):
    _shown = ", ".join(f"{k}={v}" for k, v in config["command_line"].items())
    print(
        f"ssmbench: the command line sets {_shown} for every run of this invocation: a run "
        "whose record was made with other settings is stale and its record will be "
        "replaced; to keep both, give the setting a suite of its own (a suite's overrides)",
        file=sys.stderr,
    )
validate_schema(
    config,
    source="params.yaml",
    files={**_files, "command_line": "the command line: snakemake --config"},
)
# dvc.yaml tracks every study file and the code of every model of one's own
# (ssmbench.dvc_params): checked once, by the main process
if workflow.is_main_process:
    check_studies_tracked("params.yaml", config)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/split.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        rules.runs.input,
        rules.report.output,


# Snakemake ends with "At least one job did not complete successfully" after a failed job
# and after a SIGTERM to Snakemake alone, which starts no new job and lets the running ones
# finish (their records are written): the line before it counts the suite's runs by state.
onerror:
    print(stop_summary(), file=sys.stderr)
