# One search per (benchmark, dataset, model) that params.yaml's tuning.searches tunes in
# the suite: an Optuna study on the search's fold, validation metric only, resumable (its
# journal under paths.tuning); its tuned file is an input of that model's train jobs. A
# search reruns when its search marker (common.smk) is newer than its tuned file.
rule tune:
    input:
        prepared=f"{PATHS['prepared']}/{{benchmark}}/{{dataset}}",
        search=search_marker,
        # a block-read dataset's split of the search's fold (rule split), else nothing
        split=search_split_input,
    output:
        # update(): a retried or rerun search keeps its file until it writes the new one
        tuned=update(f"{PATHS['tuned']}/{{benchmark}}/{{dataset}}/{{model}}.json"),
    log:
        f"{PATHS['logs']}/tune/{{benchmark}}/{{dataset}}/{{model}}.log",
    priority: run_priority
    conda:
        "../envs/ssmbench.yaml"
    threads: tune_threads
    resources:
        # a training job's resources (params.yaml resources.train), runtime x the budget
        mem_mb=tune_resource("mem_mb"),
        runtime=tune_resource("runtime"),
        cpus_per_task=tune_resource("cpus_per_task"),
        gpu=tune_resource("gpu"),
    params:
        cli=cli(settings=True),
    shell:
        "exec {params.cli} tune --benchmark {wildcards.benchmark} --dataset {wildcards.dataset} "
        "--model {wildcards.model} --threads ${{SLURM_CPUS_PER_TASK:-{threads}}} > {log} 2>&1"


# The index of the suite's searches: each tuned file, relative to paths.tuned ([] for a
# suite without searches). The folder is the DVC tune stage's out and the train stage's
# dep, and DVC warns of an empty one at every stage: the index is in it whatever the suite.
rule tuned:
    """Target: every tuned file of the suite (the DVC `tune` stage runs this), and their
    index."""
    input:
        tuned_paths(),
    output:
        f"{PATHS['tuned']}/{SEARCHES_INDEX}",
    log:
        f"{PATHS['logs']}/tuned.log",
    localrule: True
    params:
        # params: a change of either writes the index again (Snakemake's params trigger)
        suite=config["suite"],
        tuned=sorted(Path(p).relative_to(PATHS["tuned"]).as_posix() for p in tuned_paths()),
    run:
        write_searches_index(output[0], log[0], params.suite, params.tuned)
