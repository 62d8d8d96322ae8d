# fetch -> prepare, one job per dataset. Both write atomically (temp + rename) under a
# per-dataset lock; `recipe` (the settings the data depend on, where they come from
# included: archive_dir, local_dir, revision) reruns them when it changes.
rule fetch:
    input:
        fetch_inputs,
    output:
        f"{PATHS['raw']}/{{benchmark}}/{{dataset}}/provenance.json",
    log:
        f"{PATHS['logs']}/fetch/{{benchmark}}/{{dataset}}.log",
    conda:
        "../envs/ssmbench.yaml"
    resources:
        **config["resources"]["prepare"],
    params:
        cli=cli(),
        recipe=data_recipe,
    shell:
        "{params.cli} fetch --benchmark {wildcards.benchmark} --dataset {wildcards.dataset} > {log} 2>&1"


rule prepare:
    input:
        prepare_inputs,
    output:
        directory(f"{PATHS['prepared']}/{{benchmark}}/{{dataset}}"),
    log:
        f"{PATHS['logs']}/prepare/{{benchmark}}/{{dataset}}.log",
    conda:
        "../envs/ssmbench.yaml"
    resources:
        **config["resources"]["prepare"],
    params:
        cli=cli(),
        recipe=data_recipe,
    shell:
        "{params.cli} prepare --benchmark {wildcards.benchmark} --dataset {wildcards.dataset} > {log} 2>&1"


rule prepared:
    """Target: every dataset of the suite, prepared (the DVC `data` stage runs this)."""
    input:
        prepared_dirs(),
