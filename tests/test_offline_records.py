"""`ssmbench offline records` and `merge`: a node's finished runs packed with their logs,
and added to a project's paths.runs without ever replacing a finished record that differs
(refused whole, naming it); runs there alike are skipped; units that are not whole are
neither packed nor merged. Records are sealed as `ssmbench train` seals them
(ssmbench.staleness.sealed, the curve and test scores named with their sha256)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_project, tool_env

from ssmbench.cli import main
from ssmbench.offline.archive import write_archive
from ssmbench.offline.records import FORMAT, MANIFEST
from ssmbench.staleness import sealed, sha256_hex

A = "uea/BasicMotions/MS4N/fold0.json"  # runs of the `tiny` suite's grid
B = "uea/JapaneseVowels/MS4/fold0.json"
OTHER = "uea/Libras/MS4N/fold0.json"  # a run of no suite of the test projects


def _run(project: Path, rel: str, error: float = 0.25, host: str = "node1") -> Path:
    """A finished run's files under the project's results/runs: record, curve, test
    scores and provenance file."""
    path = project / "results" / "runs" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    stem = path.stem
    curve, scores = f"epoch,train_loss\n1,{error}\n", f"epoch,test_loss\n1,{error}\n"
    (path.parent / f"{stem}.curve.csv").write_text(curve)
    (path.parent / f"{stem}.test_scores.csv").write_text(scores)
    bench, dataset, model, _ = rel.split("/")
    record = sealed({
        "benchmark": bench, "dataset": dataset, "model": model, "fold": 0,
        "test_error": error,
        "curve_file": f"{stem}.curve.csv", "curve_sha256": sha256_hex(curve.encode()),
        "test_scores_file": f"{stem}.test_scores.csv",
        "test_scores_sha256": sha256_hex(scores.encode()),
    })  # fmt: skip
    path.write_text(json.dumps(record, indent=2) + "\n")
    provenance = {"record_sha256": record["content_sha256"], "hostname": host}
    (path.parent / f"{stem}.provenance.json").write_text(json.dumps(provenance))
    return path


def _project(root: Path) -> Path:
    def tiny(params: dict) -> None:
        params["suite"] = "tiny"

    return make_project(root, tiny)


def _in(project: Path, *argv: str) -> int:
    with contextlib.chdir(project):
        return main(list(argv))


def _unit(project: Path, rel: str) -> dict[str, bytes]:
    folder = (project / "results" / "runs" / rel).parent
    stem = Path(rel).stem
    return {p.name: p.read_bytes() for p in sorted(folder.glob(f"{stem}.*"))}


@pytest.fixture
def node(tmp_path) -> Path:
    """A node's project: runs A and B finished (A with its log), run OTHER finished but of
    no suite, one edited record, a curve without its record."""
    project = _project(tmp_path / "node")
    for rel in (A, B, OTHER):
        _run(project, rel)
    log = project / "logs" / "train" / A.replace(".json", ".log")
    log.parent.mkdir(parents=True)
    log.write_text("epoch 1 ...\nrecord written\n")
    edited = _run(project, "uea/BasicMotions/MS4/fold0.json")
    record = json.loads(edited.read_text())
    edited.write_text(json.dumps({**record, "test_error": 0.0}))  # typed over, not resealed
    (edited.parent / "fold1.curve.csv").write_text("epoch\n1\n")  # a run that did not finish
    return project


def test_finished_runs_travel_whole_and_merge(node, tmp_path, capsys):
    out = tmp_path / "records.tar"
    assert _in(node, "offline", "records", "--out", str(out)) == 0
    err = capsys.readouterr().err
    assert "left out uea/BasicMotions/MS4/fold0.json: fold0.json: its content does not match" in err
    login = _project(tmp_path / "login")
    assert _in(login, "offline", "merge", str(out)) == 0
    for rel in (A, B):
        assert _unit(login, rel) == _unit(node, rel)  # record, curve, scores, provenance
    assert not (login / "results/runs" / OTHER).exists()  # not of the suite
    assert not (login / "results/runs/uea/BasicMotions/MS4/fold0.json").exists()
    log = "logs/train/" + A.replace(".json", ".log")
    assert (login / log).read_text() == (node / log).read_text()
    capsys.readouterr()
    assert _in(login, "offline", "merge", str(out)) == 0  # again: alike, skipped
    assert "added 0 runs to results/runs; 2 already there, alike" in capsys.readouterr().err


def test_all_takes_every_finished_run_and_a_merge_again_skips_them(node, tmp_path, capsys):
    out = tmp_path / "records.tar"
    assert _in(node, "offline", "records", "--out", str(out), "--all") == 0
    login = _project(tmp_path / "login")
    assert _in(login, "offline", "merge", str(out)) == 0
    assert _unit(login, OTHER) == _unit(node, OTHER)
    capsys.readouterr()
    assert _in(login, "offline", "merge", str(out)) == 0
    assert "added 0 runs to results/runs; 3 already there, alike" in capsys.readouterr().err


def test_a_differing_finished_record_is_never_replaced(node, tmp_path, capsys):
    out = tmp_path / "records.tar"
    assert _in(node, "offline", "records", "--out", str(out)) == 0
    login = _project(tmp_path / "login")
    _run(login, A, error=0.5, host="login")  # the same run, finished here with another result
    before = _unit(login, A)
    for dry in ([], ["--dry-run"]):
        capsys.readouterr()
        assert _in(login, "offline", "merge", str(out), *dry) == 2
        err = capsys.readouterr().err
        assert f"results/runs/{A}: the project's record differs" in err
        assert "nothing was merged" in err
    assert _unit(login, A) == before
    assert not (login / "results/runs" / B).exists()  # refused whole: B is not added either
    assert not (login / "logs").exists()


def test_a_run_alike_but_made_elsewhere_is_skipped(node, tmp_path):
    out = tmp_path / "records.tar"
    assert _in(node, "offline", "records", "--out", str(out)) == 0
    login = _project(tmp_path / "login")
    _run(login, A, host="login")  # the same result, another host in its provenance
    provenance = (login / "results/runs" / A).parent / "fold0.provenance.json"
    ours = provenance.read_text()
    assert _in(login, "offline", "merge", str(out)) == 0
    assert provenance.read_text() == ours  # kept: where it ran here
    assert (login / "results/runs" / B).exists()


def test_an_archive_with_a_unit_not_whole_or_a_stray_file_is_refused(node, tmp_path, capsys):
    runs = node / "results" / "runs"
    folder = (runs / A).parent
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": FORMAT, "runs": [A]}))
    (tmp_path / "curve").write_text("epoch,train_loss\n1,0.99\n")  # not the record's curve
    run = "runs/uea/BasicMotions/MS4N"
    members = {
        MANIFEST: manifest,
        f"runs/{A}": runs / A,
        f"{run}/fold0.curve.csv": tmp_path / "curve",
        f"{run}/fold0.test_scores.csv": folder / "fold0.test_scores.csv",
    }
    write_archive(tmp_path / "broken.tar", members)
    stray = {MANIFEST: manifest, f"runs/{B}": runs / B, "runs/uea/notes.txt": manifest,
             **{f"runs/uea/JapaneseVowels/MS4/{n}": (runs / B).parent / n
                for n in ("fold0.curve.csv", "fold0.test_scores.csv")}}  # fmt: skip
    write_archive(tmp_path / "stray.tar", stray)
    login = _project(tmp_path / "login")
    refusals = {
        "broken.tar": "its curve file fold0.curve.csv is not the one written",
        "stray.tar": "runs/uea/notes.txt in the archive is no file of a finished run",
    }
    for archive, why in refusals.items():
        capsys.readouterr()
        assert _in(login, "offline", "merge", str(tmp_path / archive)) == 2
        assert why in capsys.readouterr().err
    assert not (login / "results" / "runs").exists()


def test_merge_waits_for_no_one_while_a_run_holds_the_project(node, tmp_path, capsys):
    out = tmp_path / "records.tar"
    assert _in(node, "offline", "records", "--out", str(out)) == 0
    login = _project(tmp_path / "login")
    holder = subprocess.Popen(
        [sys.executable, "-c", "from ssmbench.project_lock import acquire; import sys, time; "
         "acquire(); print('held', flush=True); sys.stdin.read()"],
        cwd=login, env=tool_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        assert _in(login, "offline", "merge", str(out)) == 1
        assert "ssmbench offline merge: error:" in capsys.readouterr().err
        assert not (login / "results" / "runs").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert _in(login, "offline", "merge", str(out)) == 0
