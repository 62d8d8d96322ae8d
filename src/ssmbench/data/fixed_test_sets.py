"""What the datasets of the ``fixed_test_sets`` fold scheme share (the TIDES tasks: Fading
Flash, one test set per step size; the drop-rate variants, one per drop rate): the
scheme's name, the TIDES references, argument checks and the ``test_sets`` keys."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral

FIXED_TEST_SETS = "fixed_test_sets"
TIDES_PAPER_URL = "https://arxiv.org/abs/2605.09742"
TIDES_CODE_URL = "https://github.com/TaylanSoydan/TIDES"


def check_count(value, what: str) -> int:
    """``value`` as an int >= 0; ValueError naming ``what`` otherwise (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0, got {value!r}.")
    return int(value)


def fmt(value: float) -> str:
    """A rate or step as it appears in keys and file names: 0.1, 1, 1.5."""
    return f"{float(value):g}"


def test_set_keys(
    values: Sequence, check: Callable, field: str, prefix: str
) -> tuple[list[float], list[str]]:
    """Checked values of a list of test-set parameters and their `test_sets` keys
    ("dt=0.1", "rate=0.5"); empty or duplicate lists raise ValueError naming `field`."""
    checked = [check(v, f"{field} entry") for v in values]
    if not checked:
        raise ValueError(f"{field} must name at least one value.")
    keys = [f"{prefix}={fmt(v)}" for v in checked]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{field} has duplicates: {list(values)!r}.")
    return checked, keys
