"""nn.functional, losses and reductions as scripts call them (torch's defaults included:
nll_loss ignores -100, nn.Softmax() picks torch's implicit dim, norms of any order), and
the legacy spellings of older tutorials (torch.LongTensor([...]), x.type(torch.FloatTensor)),
run on dualgrad.eager and on torch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results

real_torch = pytest.importorskip("torch")


def functional_program(torch):
    F = torch.nn.functional
    r = {}
    x = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.5, 2.5, -0.5, 3.0]])
    y = torch.tensor([2, 3])
    r["one_hot"] = F.one_hot(torch.tensor([0, 2, 1]), num_classes=4)
    r["normalize"], r["cos"] = F.normalize(x, dim=1), F.cosine_similarity(x[0:1], x[1:2])
    r["gelu_tanh"], r["silu"] = F.gelu(x, approximate="tanh"), F.silu(x)
    r["softmin"] = F.softmin(x, dim=1)
    r["ce"] = F.cross_entropy(x, y, weight=torch.tensor([1., 2., 3., 4.]), label_smoothing=0.1)
    r["nll_default_ignore"] = F.nll_loss(F.log_softmax(x, 1), torch.tensor([1, -100]))
    r["nll_module_ignore"] = torch.nn.NLLLoss()(F.log_softmax(x, 1), torch.tensor([-100, 3]))
    r["bce_logits"] = F.binary_cross_entropy_with_logits(x, (x > 0).float(),
                                                         pos_weight=torch.tensor([1., 2., 3., 4.]))
    r["kl"] = F.kl_div(F.log_softmax(x, -1), F.softmax(x.flip(0), -1), reduction="batchmean")
    r["margin_ranking"] = F.margin_ranking_loss(x[0], x[1], torch.tensor([1., -1., 1., -1.]),
                                                margin=0.5)
    r["triplet"] = torch.nn.TripletMarginLoss(margin=1.0)(x[0:1], x[1:2], x[0:1] * 2)
    r["triplet_swap"] = F.triplet_margin_loss(x[0:1], x[1:2], x[0:1] * 2, p=1, swap=True)
    r["cosine_embedding"] = torch.nn.CosineEmbeddingLoss(margin=0.2)(
        x, x.flip(1), torch.tensor([1.0, -1.0]))
    img = torch.arange(16.0).view(1, 1, 4, 4)
    r["interp"] = F.interpolate(img, size=(3, 5), mode="bilinear", align_corners=False)
    r["maxpool_idx"] = F.max_pool2d(img, 2, return_indices=True)[1]
    r["std"], r["var"] = x.std(), torch.var(x, dim=0, correction=0)
    r["median"] = torch.tensor([1.0, 4.0, 2.0, 3.0]).median()
    r["round"] = torch.round(torch.tensor([0.5, 1.5, 2.5, -2.5]))
    r["softmax_module_4d"] = torch.nn.Softmax()(torch.arange(24.0).view(1, 2, 3, 4) / 10)
    r["log_softmax_module_3d"] = torch.nn.LogSoftmax()(torch.arange(12.0).view(2, 3, 2) / 10)
    r["legacy_long"], r["legacy_float"] = torch.LongTensor([1, 2]), torch.FloatTensor([[1, 2]])
    r["legacy_shape"] = list(torch.DoubleTensor(2, 3).shape)
    r["type_legacy"] = x.type(torch.LongTensor)
    r["type_name"] = torch.tensor([1, 2]).type("torch.FloatTensor")
    return r


def norms_program(torch):
    r = {}
    x = torch.tensor([[3.0, -4.0, 0.0], [1.0, 0.0, 2.0]], requires_grad=True)
    total = 0
    for p in (2, 1, 3, 0.5, math.inf, -math.inf, "fro"):
        if p == "fro":
            value = x.norm(p="fro")
        else:
            value = x.norm(p=p, dim=1)
        r[f"norm_{p}"] = value
        total = total + value.sum()
    for kw in ({}, {"dim": 1}, {"ord": 1}, {"ord": math.inf}, {"ord": -1, "dim": (1, 0)},
               {"ord": 3, "dim": 0, "keepdim": True}):
        value = torch.linalg.norm(x, **kw)
        r[f"linalg_{sorted(kw.items())}"] = value
        total = total + value.sum()
    r["vector_norm"] = torch.linalg.vector_norm(x, ord=0.5)
    r["matrix_norm"] = torch.linalg.matrix_norm(x.unsqueeze(0), ord=-math.inf)
    total.backward()
    r["grad"] = x.grad
    return r


@pytest.mark.parametrize("program", [functional_program, norms_program])
def test_program_equals_torch(program):
    assert_same_results(program(dualgrad.eager), program(real_torch), rtol=1e-5, atol=1e-6)


def test_linalg_decompositions_raise_naming_the_function():
    assert not hasattr(dualgrad.eager.linalg, "lu_factor")   # a row of ABSENT
    a = np.array([[3.0, 1.0], [2.0, -4.0]])
    for ord_ in ("nuc", 2, -2):      # NOTE: from the singular values, as torch
        np.testing.assert_allclose(
            dualgrad.eager.linalg.matrix_norm(dualgrad.eager.tensor(a), ord=ord_).numpy(),
            np.linalg.norm(a, ord_), rtol=1e-12)
