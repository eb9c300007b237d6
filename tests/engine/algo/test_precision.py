"""engine/algo/precision.py: the precisions PPO runs in and their autocast contexts."""

import pytest
import torch

from puffer_tui.engine.algo.precision import autocast, check_precision


def test_an_unknown_precision_is_refused_by_name():
    assert check_precision("bfloat16") == "bfloat16"
    with pytest.raises(ValueError, match="float32 or bfloat16, got 'float16'"):
        check_precision("float16")


def test_bfloat16_multiplies_in_bfloat16_and_float32_leaves_torch_alone():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with autocast("bfloat16", torch.device("cpu")):
        assert (a @ b).dtype == torch.bfloat16
    with autocast("float32", torch.device("cpu")):
        assert (a @ b).dtype == torch.float32
