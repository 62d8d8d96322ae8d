# records -> the report: metrics, summary (with the scorecard's counts), protocol notes,
# the MS4N paper's tables and figures for the suite's benchmarks, each figure with its
# caption. The file names and folders come from ssmbench.report.outputs, the one place
# they are spelt (common.smk: report_files, report_figures, REPORT_DIRS): results/ and
# figures/ for the suite params.yaml names, results/suites/<suite>/ for any other.


rule report:
    input:
        record_paths(),
    output:
        **report_figures(),
        metrics=report_files("metrics"),
        metric_files=directory(report_files("metric_files")[0]),
        summary=report_files("summary"),
        curves=report_files("curves"),
        protocol_notes=report_files("protocol_notes"),
        scorecard=report_files("scorecard"),
        tables=report_files("table"),
    log:
        str(REPORT_DIRS.log),
    conda:
        "../envs/ssmbench.yaml"
    resources:
        **config["resources"]["report"],
    params:
        cli=cli(),
    shell:
        "{params.cli} report > {log} 2>&1"
