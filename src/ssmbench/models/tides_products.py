"""The factored products of the TIDES layer's projected B_t, C_t (``tides_ssm.TIDESSSM``),
which are never formed, and the in-place write of a chunk's outputs.

Per token n, with ẑ_n = [z_n, 1] (r + 1 numbers): the drive (ẑ_n ⊗ u_n) W, the readout
sum_k ẑ_n[k] (x_n W)[k, h] and the quadratic forms ẑ_n^T G_h ẑ_n (the RMS of B_t's columns
and C_t's rows). The (r + 1, H) intermediates are k-major (their sums over k are then
batched (1, r + 1) x (r + 1, H) products, over H row sums). Each runs over blocks of
``block`` tokens (None: all at once), so that the (block, (r + 1) H) intermediates stay in
the cache, and keeps only its inputs: the backward recomputes ẑ ⊗ u, x W and ẑ ⊗ ẑ per
block (the readout's x W costs one more (m, (r + 1) H) product per token; keeping it would
hold (N, (r + 1) H) numbers per layer until the backward).
"""

from __future__ import annotations

import torch

__all__ = ["drive_products", "quadratic_forms", "readout_products", "write_steps"]


def _with_one(z: torch.Tensor) -> torch.Tensor:
    return torch.cat([z, z.new_ones(z.size(0), 1)], dim=1)  # (N, r + 1)


def _blocks(n: int, block: int | None) -> list[slice]:
    block = block or n
    return [slice(s, s + block) for s in range(0, n, block)]


class _DriveProducts(torch.autograd.Function):
    @staticmethod
    def forward(ctx, u, z, W, block):
        # u (N, H), z (N, r), W ((r + 1) H, m) -> (N, m)
        zb = _with_one(z)
        out = u.new_empty(u.size(0), W.size(1))
        for rows in _blocks(u.size(0), block):
            zu = zb[rows].unsqueeze(-1) * u[rows].unsqueeze(1)  # (n, r + 1, H)
            torch.mm(zu.view(zu.size(0), -1), W, out=out[rows])
        ctx.block = block
        ctx.save_for_backward(u, zb, W)
        return out

    @staticmethod
    def backward(ctx, grad):
        u, zb, W = ctx.saved_tensors
        grad = grad.contiguous()
        grad_u, grad_zb, grad_W = torch.empty_like(u), torch.empty_like(zb), torch.zeros_like(W)
        for rows in _blocks(u.size(0), ctx.block):
            zu = zb[rows].unsqueeze(-1) * u[rows].unsqueeze(1)  # (n, r + 1, H)
            grad_W.addmm_(zu.view(zu.size(0), -1).T, grad[rows])
            g_zu = (grad[rows] @ W.T).view_as(zu)
            torch.bmm(zb[rows].unsqueeze(1), g_zu, out=grad_u[rows].unsqueeze(1))
            torch.sum(g_zu * u[rows].unsqueeze(1), dim=-1, out=grad_zb[rows])
        return grad_u, grad_zb[:, :-1], grad_W, None


class _ReadoutProducts(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, z, W, block):
        # x (N, m), z (N, r), W (m, (r + 1) H) -> (N, H)
        zb = _with_one(z)
        k = zb.size(1)
        y = x.new_empty(x.size(0), W.size(1) // k)
        for rows in _blocks(x.size(0), block):
            q = (x[rows] @ W).view(-1, k, y.size(1))  # (n, r + 1, H)
            torch.bmm(zb[rows].unsqueeze(1), q, out=y[rows].unsqueeze(1))
        ctx.block = block
        ctx.save_for_backward(x, zb, W)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, zb, W = ctx.saved_tensors
        grad = grad.contiguous()
        grad_x, grad_zb, grad_W = torch.empty_like(x), torch.empty_like(zb), torch.zeros_like(W)
        H, k = grad.size(1), zb.size(1)
        for rows in _blocks(x.size(0), ctx.block):
            g_q = zb[rows].unsqueeze(-1) * grad[rows].unsqueeze(1)  # (n, r + 1, H)
            g_q = g_q.view(g_q.size(0), -1)
            torch.mm(g_q, W.T, out=grad_x[rows])
            grad_W.addmm_(x[rows].T, g_q)
            q = (x[rows] @ W).view(-1, k, H)  # recomputed: keeping it costs (N, (r + 1) H)
            torch.sum(q * grad[rows].unsqueeze(1), dim=-1, out=grad_zb[rows])
        return grad_x, grad_zb[:, :-1], grad_W, None


class _QuadraticForms(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, G, block):
        # z (N, r), G (H, (r + 1)²) -> (N, H): ẑ_n^T G_h ẑ_n, ẑ = [z, 1]
        zb = _with_one(z)
        out = z.new_empty(z.size(0), G.size(0))
        for rows in _blocks(z.size(0), block):
            zz = zb[rows].unsqueeze(-1) * zb[rows].unsqueeze(1)  # (n, r + 1, r + 1)
            torch.mm(zz.view(zz.size(0), -1), G.T, out=out[rows])
        ctx.block = block
        ctx.save_for_backward(zb, G)
        return out

    @staticmethod
    def backward(ctx, grad):
        zb, G = ctx.saved_tensors
        grad = grad.contiguous()
        grad_zb, grad_G = torch.empty_like(zb), torch.zeros_like(G)
        k = zb.size(1)
        for rows in _blocks(zb.size(0), ctx.block):
            zz = zb[rows].unsqueeze(-1) * zb[rows].unsqueeze(1)
            grad_G.addmm_(grad[rows].T, zz.view(zz.size(0), -1))
            g_zz = (grad[rows] @ G).view(-1, k, k)
            g_zz = g_zz + g_zz.transpose(1, 2)  # ∂(ẑ^T M ẑ)/∂ẑ = (M + M^T) ẑ
            torch.bmm(g_zz, zb[rows].unsqueeze(-1), out=grad_zb[rows].unsqueeze(-1))
        return grad_zb[:, :-1], grad_G, None


def drive_products(u, z, W, block: int | None) -> torch.Tensor:
    """([z_n, 1] ⊗ u_n) W for every token: u (N, H), z (N, r), W ((r + 1) H, m) -> (N, m)."""
    return _DriveProducts.apply(u.contiguous(), z.contiguous(), W.contiguous(), block)


def quadratic_forms(z, G, block: int | None) -> torch.Tensor:
    """[z_n, 1]^T G_h [z_n, 1] for every token and h: z (N, r), G (H, (r + 1)²) -> (N, H)."""
    return _QuadraticForms.apply(z.contiguous(), G.contiguous(), block)


def readout_products(x, z, W, block: int | None) -> torch.Tensor:
    """sum_k [z_n, 1][k] (x_n W)[k, h] for every token: x (N, m), z (N, r),
    W (m, (r + 1) H) -> (N, H)."""
    return _ReadoutProducts.apply(x.contiguous(), z.contiguous(), W.contiguous(), block)


class _WriteSteps(torch.autograd.Function):
    """out[:, start : start + T] = y (T, B, H) time first, in place in out (B, L, H); the
    backward hands y its rows of the gradient (views) and out the whole gradient. Only for
    filling an uninitialised buffer (not requiring a gradient) with disjoint row blocks:
    the gradient of rows a later block overwrote then reaches nothing."""

    @staticmethod
    def forward(ctx, out, y, start):
        ctx.rows = slice(start, start + y.size(0))
        out[:, ctx.rows].copy_(y.transpose(0, 1))
        ctx.mark_dirty(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, grad[:, ctx.rows].transpose(0, 1), None


def write_steps(out: torch.Tensor, y: torch.Tensor, start: int) -> torch.Tensor:
    """``_WriteSteps``: y (T, B, H) into out[:, start : start + T] (out (B, L, H)), in place."""
    return _WriteSteps.apply(out, y, start)
