"""What the report reads is checked before it is used: a record's numbers are what
`ssmbench train` writes (finite, not negative, an error rate at most 1), a curve's cells
are numbers, and a test-scores file that is not a table is left out with a warning.

Each case starts from a real record of the zoo (``benchmarks/records/uea10_zoo_cpu``)
whose content or companion file is changed and its digests computed again, as a file
written by faulty code would be: the digests cannot tell, the checks must.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from ssmbench.report.aggregate import collect_records, read_record
from ssmbench.report.errors import RecordError
from ssmbench.report.figures import load_curves
from ssmbench.report.selection_optimism import selection_optimism_runs
from ssmbench.staleness import sealed, sha256_hex

SOURCE = REPO / "benchmarks/records/uea10_zoo_cpu/BasicMotions/MS4N"


@pytest.fixture
def runs(tmp_path) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(SOURCE, runs / "uea/BasicMotions/MS4N")
    return runs


def _record(runs: Path) -> Path:
    return runs / "uea/BasicMotions/MS4N/fold0.json"


def _edit(runs: Path, **changes) -> None:
    path = _record(runs)
    record = json.loads(path.read_text())
    record.update(changes)
    path.write_text(json.dumps(sealed(record), indent=2))


def _replace_companion(runs: Path, name: str, key: str, data: bytes) -> None:
    path = _record(runs).with_name(name)
    path.write_bytes(data)
    _edit(runs, **{key: sha256_hex(data)})


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (-3.0, "'test_error' must be a finite number >= 0 or null, got -3.0"),
        (float("nan"), "'test_error' must be a finite number >= 0 or null, got nan"),
        (1.5, "'test_error' 1.5 is an error rate (error_metric 'error': 1 - accuracy), so at "
              "most 1"),
    ],
)  # fmt: skip
def test_a_test_error_train_never_writes_is_refused(runs, value, said):
    _edit(runs, test_error=value)
    with pytest.raises(RecordError) as err:
        read_record(_record(runs), runs)
    assert str(err.value) == f"malformed run record {_record(runs)}: {said}"


def test_a_curve_cell_that_is_not_a_number_is_named(runs):
    curve = _record(runs).with_name("fold0.curve.csv")
    lines = curve.read_text().splitlines()
    cells = lines[1].split(",")
    cells[1] = "abc"  # train_loss of the first epoch
    lines[1] = ",".join(cells)
    _replace_companion(runs, "fold0.curve.csv", "curve_sha256", ("\n".join(lines) + "\n").encode())
    with pytest.raises(RecordError) as err:
        load_curves(runs)
    assert str(err.value) == (
        f"malformed curve file {curve}: train_loss 'abc' on data row 1 is not a number"
    )
    # the report stops before writing anything: the previous metrics.csv stands
    from ssmbench.report.build import build_report

    results = runs.parent / "results"
    results.mkdir()
    (results / "metrics.csv").write_text("the previous report's\n")
    with pytest.raises(RecordError):
        build_report(runs, results, results / "figures", {})
    assert (results / "metrics.csv").read_text() == "the previous report's\n"


@pytest.mark.parametrize(
    "data", [b"", b"epoch,test_loss,test_accuracy\n1,0.5,0.5\n2,0.4,0.6,9,9,9\n", b"\xff\xfe\x00"]
)
def test_test_scores_that_are_not_a_table_are_left_out_with_a_warning(runs, caplog, data):
    _replace_companion(runs, "fold0.test_scores.csv", "test_scores_sha256", data)
    with caplog.at_level(logging.WARNING, logger="ssmbench.report"):
        table = selection_optimism_runs(collect_records(runs), runs)
    scores = _record(runs).with_name("fold0.test_scores.csv")
    assert sorted(table["fold"]) == [1]  # fold 1's file is read as before
    assert f"{scores}: not a table of test scores (" in caplog.text


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda text: text.replace(",0.", ",abc", 1), "could not convert string to float"),
        (lambda text: "", "No columns to parse from file"),
        (lambda text: "\n".join(line.rsplit(",", 1)[0] for line in text.splitlines()),
         "missing column(s) error_std"),
    ],
)  # fmt: skip
def test_a_reference_file_that_does_not_read_is_named(tmp_path, monkeypatch, change, why):
    """The published figures are package data; one changed so that it no longer reads as
    its table is named, with how to restore it, not a pandas traceback."""
    from ssmbench.report import reference

    package = tmp_path / "ssmbench"
    shutil.copytree(REPO / "src/ssmbench/reference", package / "reference")
    target = package / "reference/published_errors.csv"
    target.write_text(change(target.read_text()))
    monkeypatch.setattr(reference.resources, "files", lambda _: package)
    with pytest.raises(RecordError) as err:
        reference.load_published_errors()
    message = str(err.value)
    assert message.startswith(f"{target}: the published figures shipped with ssmbench do not ")
    assert why in message
    assert "restore it (git checkout -- src/ssmbench/reference/published_errors.csv" in message


def _drop_column(text: str, column: str) -> str:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    at = rows[0].index(column)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([r[:at] + r[at + 1 :] for r in rows])
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "column", "read"),
    [
        ("ms4n_authors_protocol.csv", "note", lambda ref: ref.load_authors_protocol()),
        ("published_summary.csv", "value",
         lambda ref: ref.read_reference_text("published_summary.csv", ("metric", "value"))),
    ],
)  # fmt: skip
def test_a_reference_file_read_as_text_names_a_missing_column(
    tmp_path, monkeypatch, name, column, read
):
    """The files read with every cell as a string are checked for the columns their readers
    use, as the typed ones are for their dtype's columns."""
    from ssmbench.report import reference

    package = tmp_path / "ssmbench"
    shutil.copytree(REPO / "src/ssmbench/reference", package / "reference")
    target = package / "reference" / name
    read(reference)  # as shipped: reads
    monkeypatch.setattr(reference.resources, "files", lambda _: package)
    target.write_text(_drop_column(target.read_text(encoding="utf-8"), column), "utf-8")
    with pytest.raises(RecordError) as err:
        read(reference)
    assert str(err.value).startswith(f"{target}: the published figures shipped with ssmbench")
    assert f"missing column(s) {column}" in str(err.value)
