"""Report: run records -> metrics.csv, summary.json, tables and figures (see build.py;
every output file is named in outputs.py, the Table 4 comparison is table4.py)."""

from .aggregate import (
    RecordError,
    collect_records,
    summarise,
    summary_frame,
    write_metrics_csv,
    write_summary_json,
)
from .build import build_report
from .figures import figure8, load_curves
from .outputs import report_outputs
from .reference import load_published_errors, load_published_summary
from .tables import write_table

__all__ = [
    "RecordError",
    "build_report",
    "collect_records",
    "figure8",
    "load_curves",
    "load_published_errors",
    "load_published_summary",
    "report_outputs",
    "summarise",
    "summary_frame",
    "write_metrics_csv",
    "write_summary_json",
    "write_table",
]
