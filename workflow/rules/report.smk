# aggregate -> tables -> figures, from the suite's run records: one table and one
# Figure-7 panel set per benchmark of the suite, one Figure 8.

SUITE_BENCHMARKS = sorted({job.benchmark for job in GRID})


rule report:
    input:
        record_paths(),
    output:
        metrics=f"{PATHS['results']}/metrics.csv",
        summary=f"{PATHS['results']}/summary.json",
        curves=f"{PATHS['results']}/curves.csv",
        tables=expand(
            f"{PATHS['results']}/tables/{{benchmark}}_table.{{ext}}",
            benchmark=SUITE_BENCHMARKS,
            ext=["csv", "md", "tex"],
        ),
        figure7=report(
            expand(
                f"{PATHS['figures']}/figure7_{{benchmark}}.{{ext}}",
                benchmark=SUITE_BENCHMARKS,
                ext=["png", "pdf"],
            ),
            caption="../report/figure7.rst",
            category="Figures",
        ),
        figure8=report(
            multiext(f"{PATHS['figures']}/figure8_curves", ".png", ".pdf"),
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
