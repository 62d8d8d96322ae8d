"""Report: run records -> metrics.csv, summary.json, the MS4N paper's tables and figures
(see build.py; every output file is named in outputs.py).

The names below are imported on first use, so that the workflow, which only needs
``ssmbench.report.outputs`` at every parse, does not load matplotlib and aeon.
"""

from importlib import import_module

#: public name -> the module of this package that defines it
_EXPORTS = {
    "RecordError": "errors",
    "collect_records": "aggregate",
    "summarise": "aggregate",
    "summary_frame": "aggregate",
    "write_metrics_csv": "aggregate",
    "write_summary_json": "aggregate",
    "build_report": "build",
    "build_published": "build",
    "figure8": "figures",
    "load_curves": "figures",
    "report_outputs": "outputs",
    "load_published_errors": "reference",
    "load_published_summary": "reference",
    "write_table": "tables",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
