# One job per (benchmark, dataset, model, fold); each writes one record and its curve.


rule train:
    input:
        prepared=f"{PATHS['prepared']}/{{benchmark}}/{{dataset}}",
        settings=settings_marker,
    output:
        record=f"{PATHS['runs']}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.json",
        curve=f"{PATHS['runs']}/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.curve.csv",
    log:
        f"{PATHS['logs']}/train/{{benchmark}}/{{dataset}}/{{model}}/fold{{fold}}.log",
    params:
        spec=train_spec,
        cli=cli(),
    threads: lambda wildcards: train_resources(config, wildcards.model)["threads"]
    resources:
        mem_mb=train_resource("mem_mb"),
        runtime=train_resource("runtime"),
        gpu=train_resource("gpu"),
    shell:
        "{params.cli} train --benchmark {wildcards.benchmark} --dataset {wildcards.dataset} "
        "--model {wildcards.model} --fold {wildcards.fold} --threads {threads} "
        "--record {output.record} > {log} 2>&1"


rule runs:
    """Target: every run record of the suite (the DVC `train` stage runs this)."""
    input:
        record_paths(),
