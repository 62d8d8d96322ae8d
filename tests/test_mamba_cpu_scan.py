"""Mamba1's fused CPU scan (ssmbench.models.mamba_cpu_scan, ``selective_scan``'s ``fused``
method, ``auto``'s choice on the CPU): outputs and every gradient against the stepwise
reference scan and the step-by-step recurrence for every option of ``selective_scan`` and
ragged lengths; float64 gradcheck; inputs it does not take run the reference with one log
line; bitwise the same from call to call and for any thread count; its threads follow
torch's; a Mamba1 model trains a step on it as on the stepwise scan; it runs from a
read-only install."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numba
import pytest
import torch
import torch.nn.functional as F
from conftest import REPO

from ssmbench.config import model_entry
from ssmbench.models import build_model, mamba_cpu_scan, numba_runtime
from ssmbench.models.mamba import Mamba1Mixer
from ssmbench.models.mamba_scan import (
    FUSED_CPU_KERNEL,
    resolve_method,
    scan_method_for,
    selective_scan,
    selective_scan_recurrence,
)
from ssmbench.models.scan_paths import FUSED_CPU_SELECTIVE, scan_of
from ssmbench.params_file import read_params

F32, F64 = torch.float32, torch.float64
#: the options of ``selective_scan`` beside its five tensors
OPTIONS = ("D", "z", "delta_bias", "delta_softplus")


def _inputs(b=2, E=5, N=3, L=37, dtype=F32, options=OPTIONS, seed=0) -> dict:
    """``selective_scan``'s keyword arguments: u, delta, A, B, C and the ``options`` given.
    Without softplus delta is positive (|x| / 2), as the scan expects of a step."""
    gen = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.randn(*shape, generator=gen, dtype=F64)

    softplus = "delta_softplus" in options
    inp = dict(
        u=draw(b, E, L),
        delta=draw(b, E, L) if softplus else draw(b, E, L).abs() / 2,
        A=-3 * torch.rand(E, N, generator=gen, dtype=F64),
        B=draw(b, N, L),
        C=draw(b, N, L),
        D=draw(E),
        z=draw(b, E, L),
        delta_bias=draw(E) if softplus else draw(E).abs() / 10,
    )
    inp = {k: v.to(dtype) for k, v in inp.items() if k in ("u", "delta", "A", "B", "C")
           or k in options}  # fmt: skip
    if softplus:
        inp["delta_softplus"] = True
    return inp


def _tensors(inp: dict) -> dict:
    return {k: v for k, v in inp.items() if isinstance(v, torch.Tensor)}


def _with_grad(inp: dict) -> dict:
    return {k: v.clone().requires_grad_() if isinstance(v, torch.Tensor) else v
            for k, v in inp.items()}  # fmt: skip


def _output_and_grads(scan, inp: dict, weight: torch.Tensor, **kwargs):
    """y and the gradients of <y, weight> with respect to every tensor of ``inp``."""
    inp = _with_grad(inp)
    y = scan(**inp, **kwargs)
    grads = torch.autograd.grad((y * weight).sum(), list(_tensors(inp).values()))
    return y, dict(zip(_tensors(inp), grads, strict=True))


def _assert_close(a: torch.Tensor, ref: torch.Tensor, tol: float, what: str) -> None:
    """|a - ref| <= tol max|ref| everywhere (float32 rounding, relative to the scale)."""
    scale = ref.abs().max().item() or 1.0
    err = (a.double() - ref.double()).abs().max().item()
    assert err <= tol * scale, f"{what}: max |Δ| {err:.3g} > {tol:g} x {scale:.3g}"


# --- against the references ------------------------------------------------------------------

SUBSETS = [subset for r in range(len(OPTIONS) + 1) for subset in itertools.combinations(OPTIONS, r)]


@pytest.mark.parametrize("options", SUBSETS, ids=lambda o: "+".join(o) or "plain")
@pytest.mark.parametrize("L,chunk", [(37, 8), (5, 16), (1, 64), (32, 16)])
def test_outputs_and_gradients_equal_the_references(options, L, chunk):
    """float32: the fused method's y and every gradient against the stepwise method's
    (float32) and the recurrence's (float64), for every option and ragged lengths (L not
    a multiple of the chunk, L < chunk, L = 1)."""
    inp = _inputs(L=L, options=options)
    weight = torch.randn(2, 5, L, generator=torch.Generator().manual_seed(1))
    y, grads = _output_and_grads(selective_scan, inp, weight, chunk_size=chunk, method="fused")
    y_s, grads_s = _output_and_grads(
        selective_scan, inp, weight, chunk_size=chunk, method="stepwise"
    )
    inp64 = {k: v.double() if isinstance(v, torch.Tensor) else v for k, v in inp.items()}
    y_r, grads_r = _output_and_grads(selective_scan_recurrence, inp64, weight.double())
    assert y.dtype == F32 and set(grads) == set(_tensors(inp))
    for ref_y, ref_grads, tol in ((y_s, grads_s, 2e-5), (y_r, grads_r, 2e-5)):
        _assert_close(y, ref_y, tol, "y")
        for name, grad in grads.items():
            assert grad.shape == inp[name].shape and grad.dtype == F32, name
            _assert_close(grad, ref_grads[name], tol, name)


def test_float64_equals_the_recurrence_closely():
    inp = _inputs(L=23, dtype=F64)
    weight = torch.randn(2, 5, 23, dtype=F64)
    y, grads = _output_and_grads(selective_scan, inp, weight, chunk_size=4, method="fused")
    y_r, grads_r = _output_and_grads(selective_scan_recurrence, inp, weight)
    torch.testing.assert_close(y, y_r, rtol=1e-12, atol=1e-12)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, grads_r[name], rtol=1e-10, atol=1e-10, msg=name)


def test_gradcheck_float64():
    """torch.autograd.gradcheck holds the closed-form backward to finite differences, the
    kernel alone and through every option of ``selective_scan``."""
    inp = _with_grad(_inputs(b=2, E=3, N=2, L=7, dtype=F64))
    names = list(_tensors(inp))

    def scan(*tensors):
        return selective_scan(**dict(zip(names, tensors, strict=True)),
                              delta_softplus=True, chunk_size=3, method="fused")  # fmt: skip

    assert torch.autograd.gradcheck(scan, tuple(_tensors(inp).values()))
    core = [inp[k] for k in ("u", "delta", "A", "B", "C")]
    with torch.no_grad():
        core[1] = F.softplus(core[1]).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda *t: mamba_cpu_scan.selective_scan(*t, chunk_size=2), tuple(core)
    )


def test_mixed_dtypes_and_layouts_are_taken():
    """A float32 A with float64 inputs (the float64 mixer's case) and non-contiguous
    inputs: the kernel casts and copies, and gives the stepwise method's answer."""
    inp = _inputs(L=19, dtype=F64)
    inp["A"] = inp["A"].float()
    inp["u"] = inp["u"].transpose(1, 2).contiguous().transpose(1, 2)  # (b, E, L), strided
    inp["C"] = inp["C"].repeat_interleave(2, dim=-1)[..., ::2]  # the same values, strided
    assert not (inp["u"].is_contiguous() or inp["C"].is_contiguous())
    assert scan_method_for("auto", inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"]) == (
        "fused"
    )
    weight = torch.randn(2, 5, 19, dtype=F64)
    y, grads = _output_and_grads(selective_scan, inp, weight, chunk_size=8, method="fused")
    y_s, grads_s = _output_and_grads(selective_scan, inp, weight, chunk_size=8,
                                     method="stepwise")  # fmt: skip
    assert y.dtype == F64 and grads["A"].dtype == F32
    torch.testing.assert_close(y, y_s, rtol=1e-10, atol=1e-10)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, grads_s[name], rtol=1e-5, atol=1e-6, msg=name)


def test_without_gradients_no_state_is_kept(monkeypatch):
    saved = []
    run = mamba_cpu_scan._run_forward

    def spy(*args, save):
        y, h_saved, y_pre = run(*args, save=save)
        saved.append(h_saved.numel() + y_pre.numel())
        return y, h_saved, y_pre

    monkeypatch.setattr(mamba_cpu_scan, "_run_forward", spy)
    inp = _inputs(L=9)
    with torch.no_grad():
        y = selective_scan(**_with_grad(inp), method="fused")
    assert saved == [0]
    torch.testing.assert_close(y, selective_scan(**inp, method="stepwise"))


@pytest.mark.parametrize("b,E,N,L", [(0, 3, 2, 5), (2, 0, 2, 5), (2, 3, 0, 5), (2, 3, 2, 0)])
def test_empty_dimensions_give_the_stepwise_answer(b, E, N, L):
    inp = _tensors(_inputs(b=b, E=E, N=N, L=L, options=()))
    weight = torch.ones(b, E, L)
    y, grads = _output_and_grads(selective_scan, inp, weight, method="fused")
    y_s, grads_s = _output_and_grads(selective_scan, inp, weight, method="stepwise")
    assert torch.equal(y, y_s)
    for name, grad in grads.items():
        assert torch.equal(grad, grads_s[name]), name


# --- what it does not take -------------------------------------------------------------------


@pytest.fixture
def fresh_log(monkeypatch, caplog):
    """numba_runtime's once-per-process memory of fallbacks emptied; the log captured."""
    monkeypatch.setattr(numba_runtime, "_said", set())
    caplog.set_level(logging.WARNING, logger="ssmbench.kernels")
    return caplog


def _fallback_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ssmbench.kernels"]


def test_bfloat16_runs_the_reference_with_one_log_line(fresh_log):
    inp = _inputs(L=11, dtype=torch.bfloat16)
    assert resolve_method("auto", inp["u"].device) == "fused"
    weight = torch.randn(2, 5, 11, dtype=torch.bfloat16)
    y, grads = _output_and_grads(selective_scan, inp, weight, chunk_size=4)
    y2, _ = _output_and_grads(selective_scan, inp, weight, chunk_size=4)  # said once only
    y_s, grads_s = _output_and_grads(selective_scan, inp, weight, chunk_size=4,
                                     method="stepwise")  # fmt: skip
    assert torch.equal(y, y_s) and torch.equal(y2, y_s)
    for name, grad in grads.items():
        assert torch.equal(grad, grads_s[name]), name
    lines = _fallback_lines(fresh_log)
    assert len(lines) == 1, lines
    assert FUSED_CPU_KERNEL in lines[0] and "dtype torch.bfloat16" in lines[0]


def test_without_numba_the_reference_runs_with_one_log_line(fresh_log, monkeypatch):
    monkeypatch.setattr(numba_runtime, "numba_missing", lambda: "numba does not import (test)")
    inp = _inputs(L=6)
    for _ in range(2):
        y = selective_scan(**inp, method="fused")
    assert torch.equal(y, selective_scan(**inp, method="stepwise"))
    assert _fallback_lines(fresh_log) == [
        f"{FUSED_CPU_KERNEL}: the reference scan runs instead of the fused kernel: "
        "numba does not import (test)"
    ]


def test_other_devices_and_shapes_are_refused():
    inp = _tensors(_inputs(L=4))
    cpu = list(inp.values())
    assert mamba_cpu_scan.refusal(*cpu) is None
    meta = [t.to("meta") for t in cpu]
    assert "meta" in mamba_cpu_scan.refusal(*meta)
    assert scan_method_for("fused", *meta[:5]) == "stepwise"
    broadcast_B = [*cpu[:3], cpu[3][:1], cpu[4]]  # B for one row, broadcast over b
    assert "shapes" in mamba_cpu_scan.refusal(*broadcast_B)
    assert "shapes" in mamba_cpu_scan.refusal(*cpu[:5], D=cpu[5][:1])  # one D for all
    assert "shapes" in mamba_cpu_scan.refusal(*cpu[:5], z=cpu[6][:1])  # z for one row
    assert "dtype torch.int64" in mamba_cpu_scan.refusal(*[t.long() for t in cpu])


def test_broadcast_options_run_the_reference(fresh_log):
    """D and z that broadcast (one value for every channel, one row for every row): the
    stepwise method runs, with its answer."""
    inp = _inputs(L=7)
    inp["D"], inp["z"] = inp["D"][:1], inp["z"][:1]
    weight = torch.randn(2, 5, 7)
    y, grads = _output_and_grads(selective_scan, inp, weight, method="fused")
    y_s, grads_s = _output_and_grads(selective_scan, inp, weight, method="stepwise")
    assert torch.equal(y, y_s)
    for name, grad in grads.items():
        assert torch.equal(grad, grads_s[name]), name
    assert len(_fallback_lines(fresh_log)) == 1


# --- determinism and threads -----------------------------------------------------------------


def _run_with_threads(n: int, inp: dict, weight: torch.Tensor):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return _output_and_grads(selective_scan, inp, weight, chunk_size=8, method="fused")
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("b", [1, 3, 40])  # many channel groups, a few, one
def test_bitwise_the_same_every_call_and_thread_count(b):
    """The sums over channels (∂l/∂B, ∂l/∂C) and rows (∂l/∂A) are in an order no thread
    count changes: two calls, and a call on one thread, give the same bits."""
    inp = _inputs(b=b, E=6, N=5, L=29)
    weight = torch.randn(b, 6, 29, generator=torch.Generator().manual_seed(2))
    pool = numba.config.NUMBA_NUM_THREADS
    runs = [_run_with_threads(pool, inp, weight) for _ in range(2)]
    runs.append(_run_with_threads(1, inp, weight))
    y0, g0 = runs[0]
    for y, grads in runs[1:]:
        assert torch.equal(y, y0)
        for name, grad in grads.items():
            assert torch.equal(grad, g0[name]), name


def test_threads_follow_torch(monkeypatch):
    """Inside each kernel call numba runs torch's intra-op thread count (capped by its
    pool), and its own count is back after the call."""
    seen = []
    for name in ("_forward", "_backward"):
        kernel = getattr(mamba_cpu_scan, name)

        def spy(*args, kernel=kernel, name=name):
            seen.append((name, numba.get_num_threads()))
            return kernel(*args)

        monkeypatch.setattr(mamba_cpu_scan, name, spy)
    pool = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(pool)
    inp = _inputs(L=9)
    weight = torch.ones(2, 5, 9)
    for n in sorted({1, 2, pool}):
        seen.clear()
        _run_with_threads(n, inp, weight)
        want = min(n, pool)
        assert seen == [("_forward", want), ("_backward", want)], (n, seen)
        assert numba.get_num_threads() == pool


# --- a model -----------------------------------------------------------------------------


def test_mamba1_trains_a_step_on_the_fused_scan_as_on_the_stepwise_one():
    """params.yaml's Mamba1 entry (smaller), built by the registry with the default scan
    method: on the CPU it runs the fused kernel, and a training step gives the stepwise
    scan's loss, gradients and updated weights."""
    entry = {**model_entry(read_params(REPO / "params.yaml"), "Mamba1"), "d_model": 8,
             "d_state": 6}  # fmt: skip
    C, K, L = 3, 4, 45
    gen = torch.Generator().manual_seed(3)
    x, y = torch.randn(4, C, L, generator=gen), torch.randint(0, K, (4,), generator=gen)
    results = {}
    for method in ("auto", "stepwise"):
        torch.manual_seed(0)
        model = build_model("Mamba1", C, K, L, entry)
        for mixer in model.modules():
            if isinstance(mixer, Mamba1Mixer) and method != "auto":
                mixer.scan_method = method
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grads = {k: p.grad.clone() for k, p in model.named_parameters()}
        optimizer.step()
        results[method] = (loss.detach(), grads, scan_of(model), model.state_dict())
    loss, grads, scan, weights = results["auto"]
    loss_s, grads_s, scan_s, weights_s = results["stepwise"]
    assert scan == FUSED_CPU_SELECTIVE and scan_s != scan
    torch.testing.assert_close(loss, loss_s, rtol=1e-5, atol=1e-6)
    for name, grad in grads.items():
        _assert_close(grad, grads_s[name], 1e-4, name)
    for name, w in weights.items():
        torch.testing.assert_close(w, weights_s[name], rtol=1e-4, atol=1e-5, msg=name)


# --- a read-only install ------------------------------------------------------------------

_READ_ONLY_RUN = """
import sys

import torch

from ssmbench.models import mamba_cpu_scan, mamba_scan

assert mamba_cpu_scan.__file__.startswith(sys.argv[1]), mamba_cpu_scan.__file__
gen = torch.Generator().manual_seed(0)
u, delta, z = (torch.randn(2, 4, 21, generator=gen) for _ in range(3))
A = -torch.rand(4, 3, generator=gen)
B, C = (torch.randn(2, 3, 21, generator=gen) for _ in range(2))
assert mamba_scan.scan_method_for("auto", u, delta, A, B, C) == "fused"
kw = dict(z=z, delta_softplus=True, chunk_size=8)
y = mamba_scan.selective_scan(u, delta, A, B, C, method="fused", **kw)
ref = mamba_scan.selective_scan(u, delta, A, B, C, method="stepwise", **kw)
torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
stats = mamba_cpu_scan._forward.stats
print("cache", sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def test_a_read_only_install_caches_in_the_user_cache(tmp_path):
    """The package copied into a folder nobody may write (root: with the capability to
    override file permissions dropped, setpriv), NUMBA_CACHE_DIR unset: the kernel runs
    and gives the reference's answer; numba writes its cache in the user's cache folder
    (``~/.cache/numba``), where the next process finds it."""
    setpriv = shutil.which("setpriv")
    prefix: list[str] = []
    if os.geteuid() == 0:
        if setpriv is None:
            pytest.skip("as root, permissions stop no write without setpriv")
        drop = "-dac_override,-dac_read_search"
        prefix = [setpriv, "--bounding-set", drop, "--inh-caps", drop]
    site, home = tmp_path / "site", tmp_path / "home"
    shutil.copytree(REPO / "src" / "ssmbench", site / "ssmbench",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}  # fmt: skip
    env.update(HOME=str(home), PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    folders = [site, *(p for p in site.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        runs = [
            subprocess.run(
                [*prefix, sys.executable, "-c", textwrap.dedent(_READ_ONLY_RUN), str(site)],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
                cwd=tmp_path,
            )
            for _ in range(2)
        ]
    finally:
        for folder in folders:
            folder.chmod(0o755)
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    assert runs[0].stdout.split() == ["cache", "0", "1"]  # compiled, and saved...
    assert runs[1].stdout.split() == ["cache", "1", "0"]  # ...where the next process loads it
    assert not list(site.rglob("*.nbi")), "numba wrote beside the read-only module"
    cached = [p.name for p in (home / ".cache" / "numba").rglob("mamba_cpu_scan._forward-*.nbi")]
    assert len(cached) == 1, list((home / ".cache").rglob("*"))


def test_torch_keeps_its_thread_count():
    """numba's OpenMP layer starts its pool with omp_set_num_threads(pool size) at its first
    parallel loop, which torch's OpenMP takes for its own count: a fresh process with one
    torch thread still has one after the kernel ran."""
    code = textwrap.dedent("""
        import torch

        from ssmbench.models.mamba_scan import selective_scan

        torch.set_num_threads(1)
        u, delta, z = (torch.rand(2, 4, 9) for _ in range(3))
        B, C = torch.randn(2, 3, 9), torch.randn(2, 3, 9)
        selective_scan(u, delta, -torch.rand(4, 3), B, C, method="fused")
        print(torch.get_num_threads())
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["1"]
