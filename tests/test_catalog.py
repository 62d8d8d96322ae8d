"""The dataset catalog of both studies and `ssmbench datasets` (no data, no config)."""

from __future__ import annotations

import csv
import dataclasses
import io
from collections import Counter

import pytest

from ssmbench.cli import main
from ssmbench.data.catalog import CatalogEntry, catalog, catalog_entry, domain_of, known_datasets
from ssmbench.data.errors import DataError
from ssmbench.data.monster.catalog import MONSTER_DATASETS
from ssmbench.data.source_registry import SOURCES
from ssmbench.data.uea.catalog import UEA_DATASETS
from ssmbench.report.reference import load_published_errors

#: the datasets of both studies per benchmark: 126 in all
STUDIES = {"uea": 30, "monster": 29, "physiome": 6, "physiome_ode": 50, "synthetic": 2,
           "uea_drop": 2, "uea6": 7}  # fmt: skip
MONSTER_DOMAINS = {"Audio": 7, "Satellite": 7, "HAR": 7, "EEG": 4, "Counts": 2, "Other": 2}


def test_monster_29_in_six_domains():
    entries = catalog(benchmark="monster")
    assert len(entries) == 29 == len(MONSTER_DATASETS)
    assert Counter(e.domain for e in entries) == MONSTER_DOMAINS
    assert known_datasets("monster") == sorted(MONSTER_DATASETS)
    for e in entries:
        assert e.task == "classification"
        assert e.source == f"https://huggingface.co/datasets/monster-monash/{e.name}"
        assert e.ref and e.ref.startswith("https://")
        # every figure was read from the MONSTER paper: none is missing for these 29
        assert all(isinstance(v, int) and v > 0 for v in (e.N, e.C, e.L, e.n_classes)), e


def test_monster_names_match_the_published_errors():
    published = load_published_errors()
    names = set(published.loc[published["benchmark"] == "monster", "dataset"])
    assert set(MONSTER_DATASETS) == names


def test_monster_aliases_and_domain_of():
    by_name = {e.name: e for e in catalog(benchmark="monster")}
    assert "Tiselac2" in by_name["Tiselac"].aliases
    assert "S2Agri-19" in by_name["S2Agri-17"].aliases
    assert "S2Agri-10pc-44" in by_name["S2Agri-10pc-34"].aliases
    aliases = [a for e in by_name.values() for a in e.aliases]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & set(by_name)
    assert domain_of("monster", "Tiselac2") == "Satellite"
    assert domain_of("monster", "DREAMERA") == "EEG"
    assert domain_of("uea", "BasicMotions") == "HAR"
    assert domain_of("uea", "NoSuchSet") == "Other"


def test_uea_30_unchanged():
    entries = catalog(benchmark="uea")
    assert len(entries) == 30 == len(known_datasets("uea"))
    assert {e.name for e in entries} == set(UEA_DATASETS)
    basic = next(e for e in entries if e.name == "BasicMotions")
    assert (basic.N, basic.C, basic.L, basic.n_classes) == (80, 6, 100, 4)
    wingbeat = next(e for e in entries if e.name == "InsectWingbeat")
    assert wingbeat.L is None and wingbeat.N is None


def test_tides_entries():
    physiome = catalog(benchmark="physiome")
    assert [e.name for e in physiome] == [
        "HodgkinHuxley1952",
        "Noble1962",
        "BeelerReuter1977",
        "DiFrancescoNoble1985",
        "LuoRudy1991",
        "HOD01",
    ]
    for e in physiome:
        assert (e.task, e.domain, e.n_classes) == ("regression", "Physiome", None)
        assert e.source == "https://zenodo.org/records/11492058"
    flash, noisy = catalog(benchmark="synthetic")
    for entry, name in ((flash, "FadingFlash"), (noisy, "FadingFlashNoisy")):
        assert (entry.name, entry.task, entry.C, entry.L, entry.domain, entry.N) == (
            name,
            "regression",
            4,
            40,
            "Synthetic",
            120_000,  # the generator's defaults: 100,000 + 10 x 2,000
        )
    drop, basic_drop = sorted(
        catalog(benchmark="uea_drop"), key=lambda e: e.name != "EigenWormsDrop"
    )
    assert (basic_drop.name, basic_drop.C, basic_drop.L) == ("BasicMotionsDrop", 6, 100)
    worms = UEA_DATASETS["EigenWorms"]
    assert (drop.name, drop.task, drop.C, drop.L, drop.n_classes) == (
        "EigenWormsDrop",
        "classification",
        6,
        17984,
        5,
    )
    assert (drop.C, drop.L, drop.n_classes) == (worms["C"], worms["L"], worms["classes"])


def test_entries_are_frozen_and_unique():
    entries = catalog()
    # both studies' datasets, whatever other source is registered besides
    assert {b: n for b, n in Counter(e.benchmark for e in entries).items() if b in STUDIES} == (
        STUDIES
    )
    assert all(isinstance(e, CatalogEntry) for e in entries)
    assert len({(e.benchmark, e.name) for e in entries}) == len(entries)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entries[0].N = 1


def test_filters():
    eeg = catalog(domain="EEG")
    assert {e.benchmark for e in eeg} == {"uea", "monster", "uea6"}
    assert all(e.domain == "EEG" for e in eeg)
    assert len(catalog(benchmark="monster", domain="EEG")) == 4
    assert catalog(benchmark="MONSTER", domain="har") == catalog(benchmark="monster", domain="HAR")
    assert catalog(benchmark="uea", domain="Satellite") == []


def test_bad_filters():
    with pytest.raises(DataError, match=r"unknown benchmark 'nope'.*monster.*uea"):
        catalog(benchmark="nope")
    with pytest.raises(DataError, match=r"unknown domain 'Sat'.*Satellite"):
        catalog(domain="Sat")
    with pytest.raises(DataError, match="no dataset catalog"):
        known_datasets("nope")


def test_a_row_is_found_under_its_benchmark_else_its_source():
    """A benchmark of its own name (``uea10``, source ``uea``) has its source's rows; a UEA
    row gives its official split, N being its sum."""
    basic = catalog_entry("uea10", "BasicMotions", "uea")
    assert basic is not None and basic.benchmark == "uea"
    assert (basic.n_train, basic.n_test, basic.N) == (40, 40, 80)
    assert catalog_entry("uea6", "BasicMotions", "uea6").N == 80  # uea6's own row first
    assert catalog_entry("uea6", "BasicMotions", "uea6").n_train is None
    assert catalog_entry("uea10", "NoSuchSet", "uea") is None
    assert catalog_entry("nope", "BasicMotions") is None


def test_a_registered_source_s_rows_are_in_the_catalog(monkeypatch):
    """The catalog gathers the rows through the source table: a source registered there
    (one line) has its rows listed, counted and given a domain, nothing else touched."""
    rows = {"Tiny": {"domain": "Toy", "N": 6, "C": 2, "L": 3, "classes": 2, "aliases": ("Wee",)}}
    toy = dataclasses.replace(SOURCES["synthetic"], catalog=lambda: {"toy": rows})
    monkeypatch.setitem(SOURCES, "toy", toy)
    (tiny,) = catalog(benchmark="toy")
    assert (tiny.name, tiny.task, tiny.N, tiny.n_classes) == ("Tiny", "classification", 6, 2)
    assert known_datasets("toy") == ["Tiny"] and domain_of("toy", "Wee") == "Toy"
    assert [e.name for e in catalog(domain="Toy")] == ["Tiny"]
    clash = dataclasses.replace(toy, catalog=lambda: {"uea": rows})
    monkeypatch.setitem(SOURCES, "toy", clash)
    with pytest.raises(DataError, match="catalog benchmark 'uea' is also another source's"):
        catalog()


def test_cli_datasets_table(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no params.yaml here: the command must not need one
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    # in the source table's order; physiome's two benchmarks side by side
    assert (
        "uea: 30, monster: 29, physiome: 6, physiome_ode: 50, synthetic: 2, uea_drop: 2, uea6: 7"
    ) in out
    assert f"({len(catalog())} datasets)" in out
    for column in ("name", "benchmark", "domain", "task", "N", "C", "L", "classes", "source"):
        assert column in out.splitlines()[0]
    assert "S2Agri-17" in out and "FadingFlash" in out

    assert main(["datasets", "--benchmark", "monster", "--domain", "Audio"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("monster: 7 (7 datasets)")
    assert "AudioMNIST-DS" in out and "LakeIce" not in out


def test_cli_datasets_csv(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--params", "missing.yaml", "datasets", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(captured.out)))
    assert len(rows) == len(catalog()) >= sum(STUDIES.values())
    assert Counter(r["benchmark"] for r in rows)["monster"] == 29
    lakeice = next(r for r in rows if r["name"] == "LakeIce")
    assert (lakeice["N"], lakeice["C"], lakeice["L"], lakeice["classes"]) == (
        "129280",
        "1",
        "161",
        "3",
    )
    assert "uea: 30, monster: 29" in captured.err


def test_cli_datasets_bad_filter(capsys):
    assert main(["datasets", "--domain", "Nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown domain 'Nope'" in err and "Satellite" in err
