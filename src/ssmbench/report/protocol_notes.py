"""The report's protocol notes: what the runs were trained with, setting by setting, beside
what the MS4N authors' code does where the paper is silent
(``reference/ms4n_authors_protocol.csv``), with every departure marked.

Only the MS4N study's benchmarks (``uea``, ``monster``) have a reference protocol here;
the others are listed with their settings alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ssmbench.io import atomic_write_text

from .reference import load_authors_protocol

#: benchmarks whose runs are compared with the MS4N authors' code
MS4N_BENCHMARKS = ("uea", "monster")
#: model families the authors' dropout applies to (their run script's one dropout)
DROPOUT_FAMILIES = ("ms4", "s4d")
#: what the authors' code does that no setting of ours can depart from
FIXED_NOTES = (
    "The authors' trainer tests once, the checkpoint of the lowest validation loss on a "
    "split of the training rows; so does every run here: no setting above lets the test "
    "split choose an epoch or a configuration.",
    "UEA values are z-scored per channel with the training split's statistics (the run "
    "script's normalization='per_channel'; the MONSTER loader the authors run ignores "
    "that argument and their own UEA loader is not published). MONSTER data are used "
    "as given, as that loader does.",
)


#: a departure no setting names: runs whose X was over protocol.reading.in_memory_max_gb
BLOCK_READING_NOTE = (
    "**departs**: {n} of {of} runs read X in block-shuffled epochs (their record's "
    "`reading`: X over `protocol.reading.in_memory_max_gb`; blocks of consecutive training "
    "rows shuffled, rows shuffled within windows of `buffer_blocks` blocks; "
    "`benchmarks/bench_block_shuffle.py` measures what it changes); the other runs read X "
    "into memory and draw a full shuffle of the training rows every epoch."
)


def _loaded(value):
    """A record's JSON column as its value; None where the record has none (a frame of
    records of which only some have the column holds NaN there)."""
    if isinstance(value, str):
        return json.loads(value)
    return value if isinstance(value, dict) else None


def _block_read(records: pd.DataFrame) -> int:
    """How many of the records read X in block-shuffled epochs (``reading.mode``)."""
    if "reading" not in records:
        return 0
    plans = (_loaded(value) for value in records["reading"])
    return sum(isinstance(plan, dict) and plan.get("mode") == "blocks" for plan in plans)


def _parsed(records: pd.DataFrame) -> list[tuple[dict, dict]]:
    """Each record's (protocol, model_params), parsed once ({} where a record has none:
    its settings then show as "(not set)")."""
    missing = pd.Series([None] * len(records), index=records.index)
    protocols = records["protocol"] if "protocol" in records else missing
    models = records["model_params"] if "model_params" in records else missing
    return [(_loaded(p) or {}, _loaded(m) or {}) for p, m in zip(protocols, models, strict=True)]


def _values(parsed: list[tuple[dict, dict]], setting: str) -> list:
    """The distinct values of `setting` in the records: a protocol key, or a model's
    dropout for the families the authors' dropout applies to."""
    seen: list = []
    for protocol, model in parsed:
        if setting == "dropout":
            if model.get("family") not in DROPOUT_FAMILIES or "dropout" not in model:
                continue
            value = model["dropout"]
        else:
            value = protocol.get(setting, "(not set)")
        if value not in seen:
            seen.append(value)
    return seen


def _show(value) -> str:
    return "null" if value is None else json.dumps(value) if isinstance(value, str) else str(value)


def protocol_notes(records: pd.DataFrame) -> str:
    """The notes as Markdown, one section per benchmark of `records` (collect_records)."""
    authors = load_authors_protocol()
    lines = [
        "# Protocol notes",
        "",
        "What the runs were trained with, beside what the MS4N authors' code does where "
        "the paper is silent (github h-saadatmand/MS4N `MS4N_Run.py`, `model/MS4N.py`; "
        "the MONSTER benchmark's `src/trainer.py`, `src/data_loader.py`). **departs** marks "
        "a value of ours that is not the authors'.",
    ]
    for bench in sorted(records["benchmark"].unique()):
        rows = records[records["benchmark"] == bench]
        parsed = _parsed(rows)
        lines += ["", f"## {bench} ({len(rows)} runs)", ""]
        if bench not in MS4N_BENCHMARKS:
            settings = sorted({k for protocol, _ in parsed for k in protocol})
            lines += ["Not an MS4N benchmark: no reference protocol to compare with.", "",
                      "| setting | ours |", "|---|---|"]  # fmt: skip
            lines += [f"| {k} | {', '.join(map(_show, _values(parsed, k)))} |" for k in settings]
            if blocks := _block_read(rows):
                lines += ["", BLOCK_READING_NOTE.format(n=blocks, of=len(rows))]
            continue
        ref = authors[authors["benchmark"].isin(["*", bench])]
        lines += ["| setting | ours | authors' code | | source | what the code does |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        departures = 0
        for _, r in ref.iterrows():
            ours = _values(parsed, r["setting"])
            if not ours:
                continue
            same = r["has_value"] and ours == [r["authors"]]
            departures += not same
            theirs = _show(r["authors"]) if r["has_value"] else "—"
            lines.append(
                f"| {r['setting']} | {', '.join(map(_show, ours))} | {theirs} | "
                f"{'' if same else '**departs**'} | {r['source']} | {r['note']} |"
            )
        if blocks := _block_read(rows):
            departures += 1
            lines += ["", BLOCK_READING_NOTE.format(n=blocks, of=len(rows))]
        lines += ["", f"{departures} departure(s)."]
        lines += ["", *(f"- {note}" for note in FIXED_NOTES)]
    return "\n".join(lines) + "\n"


def write_protocol_notes(records: pd.DataFrame, path: str | os.PathLike) -> Path:
    return atomic_write_text(path, protocol_notes(records))
