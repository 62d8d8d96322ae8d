# One job per (benchmark, dataset, model, fold); each writes one record and its curve.
# Resources per run come from params.yaml (resources.train, resolved by
# ssmbench.resources); on SLURM, runs of a size class with group: true are bundled into
# group jobs. A job reruns when its settings marker (common.smk) is newer than its record.
rule train:
    input:
        prepared=f"{PATHS['prepared']}/{{benchmark}}/{{dataset}}",
        settings=settings_marker,
        # a tuned run's tuned file (rule tune), else nothing
        tuned=tuned_input,
        # a block-read dataset's fold split (rule split), else nothing
        split=split_input,
    output:
        # update(): Snakemake deletes a job's outputs before running it, and runs a job again
        # on a retry (of its group) even if its record was made; with update() the record
        # stays and `ssmbench train` keeps it when it is current.
        record=update(f"{PATHS['runs']}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.json"),
        curve=update(f"{PATHS['runs']}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.curve.csv"),
    log:
        f"{PATHS['logs']}/train/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.log",
    priority: run_priority
    group:
        train_group
    conda:
        "../envs/ssmbench.yaml"
    threads: train_threads
    resources:
        **({"gpu_model": train_resource("gpu_model")} if USES_GPU_MODEL else {}),
        **({"slurm_extra": train_resource("slurm_extra")} if USES_SLURM_EXTRA else {}),
        # per run from params.yaml resources.train (size class, model, attempt)
        mem_mb=train_resource("mem_mb"),
        runtime=train_resource("runtime"),
        cpus_per_task=train_resource("cpus_per_task"),
        gpu=train_resource("gpu"),
        # the attempt reaches the run's record (provenance) only through a resource
        attempt=lambda wildcards, attempt: attempt,
    params:
        cli=cli(settings=True),
        # --config replace=true: a record another suite made with other settings is replaced
        replace="--replace" if REPLACE_RECORDS else "",
    shell:
        # On SLURM the run uses the CPUs its job step was given (cpus_per_task); locally
        # Snakemake's {threads}. `exec`: signals (SLURM's SIGTERM) reach the run itself.
        # A current record (ssmbench.staleness.record_state) is kept, not trained again,
        # and the log says so: a retried group job runs all of its runs again, and a
        # workflow-code change reruns jobs.
        "SSMBENCH_ATTEMPT={resources.attempt} exec {params.cli} train --benchmark {wildcards.benchmark} --dataset {wildcards.dataset} "
        "--model {wildcards.model} --fold {wildcards.fold} "
        "--threads ${{SLURM_CPUS_PER_TASK:-{threads}}} --record {output.record} {params.replace} > {log} 2>&1"


rule runs:
    """Target: every run record of the suite (the DVC `train` stage runs this)."""
    input:
        record_paths(),
