# ssmbench workflow: wiring only. The grid, paths and resources come from params.yaml.
#   snakemake --cores all                       # the suite named in params.yaml (default)
#   snakemake --cores all --config suite=uea10  # another suite
#   snakemake --profile slurm                   # on a SLURM cluster (docs/cluster.md)
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "params.yaml"


validate(config, "workflow/schemas/params.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        rules.runs.input,
        rules.report.output,
    default_target: True
