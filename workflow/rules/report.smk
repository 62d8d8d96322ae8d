# aggregate -> tables -> figures, from the suite's run records: one table and one
# Figure-7 panel set per benchmark of the suite, one Figure 8. The file names come from
# ssmbench.report.outputs, the one place they are spelt (common.smk: report_files).


rule report:
    input:
        record_paths(),
    output:
        metrics=report_files("metrics"),
        summary=report_files("summary"),
        curves=report_files("curves"),
        tables=report_files("table"),
        figure7=report(
            report_files("figure7"),
            caption="../report/figure7.rst",
            category="Figures",
        ),
        figure8=report(
            report_files("figure8"),
            caption="../report/figure8.rst",
            category="Figures",
        ),
    log:
        f"{PATHS['logs']}/report.log",
    resources:
        **config["resources"]["report"],
    params:
        cli=cli(),
    shell:
        "{params.cli} report > {log} 2>&1"
