# One job per (benchmark, dataset, fold) of a dataset read in blocks (X above
# protocol.reading.in_memory_max_gb; ssmbench.config.split_dir_of): the fold's training,
# validation and test rows drawn once (ssmbench.train.fold_split.write_split), read by
# every training job (and search) of that fold, whose memory then does not grow with N.
# Other datasets have no split job: their runs draw their split themselves.
rule split:
    input:
        prepared=f"{PATHS['prepared']}/{{benchmark}}/{{dataset}}",
    output:
        # written whole or not at all (a temporary folder beside it, then a rename)
        directory(f"{PATHS['splits']}/{{benchmark}}/{{dataset}}/fold{{fold}}"),
    log:
        f"{PATHS['logs']}/split/{{benchmark}}/{{dataset}}/fold{{fold}}.log",
    # as its training jobs: larger datasets first
    priority: run_priority
    conda:
        "../envs/ssmbench.yaml"
    resources:
        **config["resources"]["prepare"],
    params:
        cli=cli(settings=True),
        # the fold, val_fraction, seed and fallback it is drawn with: a change draws it again
        settings=split_settings_of,
    shell:
        "{params.cli} split --benchmark {wildcards.benchmark} --dataset {wildcards.dataset} "
        "--fold {wildcards.fold} --out {output} > {log} 2>&1"
