# aggregate -> tables -> figures, from the suite's run records.


rule report:
    input:
        record_paths(),
    output:
        metrics=f"{PATHS['results']}/metrics.csv",
        summary=f"{PATHS['results']}/summary.json",
        curves=f"{PATHS['results']}/curves.csv",
        table=multiext(f"{PATHS['results']}/tables/uea_table", ".csv", ".md", ".tex"),
        figure7=report(
            multiext(f"{PATHS['figures']}/figure7_uea", ".png", ".pdf"),
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
