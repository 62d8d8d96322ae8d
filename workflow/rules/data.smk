# fetch -> prepare, one job per dataset. Both write atomically (temp + rename) under a
# per-dataset lock; `recipe` (the settings the data depend on, where they come from
# included: archive_dir, local_dir, revision) reruns them when it changes.
from ssmbench.data.sources import source_files


def fetch_inputs(wildcards):
    """The user's files a fetch copies (archive_dir's, local_dir's; none for a download or
    a generated dataset): one newer than the raw copy's provenance.json (edited in place)
    fetches again, and the fetch compares contents (ssmbench.data.sources.source_files)."""
    known(wildcards)
    settings = benchmark_settings(config, wildcards.benchmark, None, wildcards.dataset)
    return [str(p) for p in source_files(wildcards.dataset, settings)]


rule fetch:
    input:
        fetch_inputs,
    output:
        f"{PATHS['raw']}/{{benchmark}}/{{dataset}}/provenance.json",
    log:
        f"{PATHS['logs']}/fetch/{{benchmark}}/{{dataset}}.log",
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
