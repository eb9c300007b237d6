"""The one-hot grid layer on CPU as a sum of table rows, with its own backward.

    x = one_hot_sum(cells_uint8, table, bias)   # == one_hot(cells) @ table + bias

One-hot grids are mostly zeros (squared: 5 non-zero cells of 121), so the layer adds the table
rows of the non-zero cells instead of multiplying a mostly-zero matrix. PyTorch's embedding_bag
does the forward well, but its backward sorts every index, a large share of a squared
minibatch; the C kernels (engine/native/one_hot.pyx) walk the cells in place both ways,
skipping zeros 8 at a time, in well under half embedding_bag's time (docs/measurement-log.md).

Tested in: tests/engine/algo/test_policy.py.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from puffer_tui.engine.native.one_hot import one_hot_sum as _forward
from puffer_tui.engine.native.one_hot import one_hot_sum_backward as _backward


def fits(cells: torch.Tensor, table: torch.Tensor) -> bool:
    """Whether the kernels take these tensors: CPU uint8 cells, a contiguous CPU float32
    table."""
    return (cells.device.type == "cpu" and cells.dtype == torch.uint8
            and table.device.type == "cpu" and table.dtype == torch.float32
            and table.is_contiguous())


class _OneHotSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, cells, table, bias):
        cells = cells.contiguous()
        # a fresh tensor: expand(1, -1).contiguous() would be the bias itself, summed into
        out = torch.empty((cells.shape[0], table.shape[1]), dtype=torch.float32)
        out.copy_(bias.detach().expand_as(out))
        _forward(cells.numpy(), table.detach().numpy(), out.numpy())
        ctx.save_for_backward(cells)
        ctx.table_shape = table.shape
        return out

    @staticmethod
    @once_differentiable  # a second derivative through the kernel is refused by name
    def backward(ctx, grad):
        (cells,) = ctx.saved_tensors
        grad = grad.detach().float().contiguous()
        grad_table = None
        if ctx.needs_input_grad[1]:
            grad_table = grad.new_zeros(ctx.table_shape)
            _backward(cells.numpy(), grad.numpy(), grad_table.numpy())
        grad_bias = grad.sum(0) if ctx.needs_input_grad[2] else None
        return None, grad_table, grad_bias


def one_hot_sum(cells: torch.Tensor, table: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """[N, C] uint8 cells, [C * (values - 1), H] table, [H] bias -> [N, H] float32. A cell
    value above the table's range raises ValueError naming the value, row and cell."""
    return _OneHotSum.apply(cells, table, bias)
