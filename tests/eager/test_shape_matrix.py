"""Shape, view and indexing calls with the arguments that differ between NumPy and torch,
against torch: squeeze of a non-1 dim (a no-op), unsqueeze/flatten/reshape/expand edge
shapes, split and chunk of uneven sizes, negative narrow starts and dims, cat with a legacy
empty (0,) tensor, advanced indexing (index lists, masks, mixed, out of bounds, a float or a
0-d tensor index), gather/index_select/take with negative indices, repeat_interleave,
meshgrid orders, sort/topk ties, unique and searchsorted. Each must give torch's dtype, shape
and values, or raise where torch raises.

Found by this test, each a NumPy behaviour before: x[::-1] reversed (torch raises "step must
be greater than zero"); gather and index_select with a -1 index read the last element
(torch raises: out of bounds); x.flip(0, 1) raised a TypeError (torch takes the dims as
separate arguments too).
"""
import warnings

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")

CASES = {
 "squeeze(1) of (2,3)": lambda L: L.ones(2,3).squeeze(1),
 "squeeze((0,1)) of (1,3)": lambda L: L.ones(1,3).squeeze((0,1)),
 "unsqueeze(-1) of (2,)": lambda L: L.ones(2).unsqueeze(-1),
 "unsqueeze(2) of (2,3)": lambda L: L.ones(2,3).unsqueeze(2),
 "unsqueeze(3) of (2,3)": lambda L: L.ones(2,3).unsqueeze(3),
 "flatten(1) of (2,3,4)": lambda L: L.ones(2,3,4).flatten(1),
 "flatten of 0-d": lambda L: L.tensor(5.).flatten(),
 "flatten(0,-1) of (2,0,3)": lambda L: L.ones(2,0,3).flatten(0,-1),
 "reshape(-1, 0) of (0,3)": lambda L: L.ones(0,3).reshape(-1, 0),
 "reshape(0,-1) of (0,3)": lambda L: L.ones(0,3).reshape(0,-1),
 "view(-1) of (2,3)": lambda L: L.ones(2,3).view(-1),
 "expand(-1,4) of (3,1)": lambda L: L.ones(3,1).expand(-1,4),
 "expand(2,3,1) of (3,1)": lambda L: L.ones(3,1).expand(2,3,1),
 "expand(4) of (3,)": lambda L: L.ones(3).expand(4),
 "repeat(2,1,1) of (3,)": lambda L: L.arange(3).repeat(2,1,1),
 "tile((2,)) of (2,3)": lambda L: L.arange(6).reshape(2,3).tile((2,)),
 "chunk(4) of (10,)": lambda L: L.stack([c.sum() for c in L.arange(10).chunk(4)]),
 "chunk(4) count of (6,)": lambda L: L.tensor(len(L.arange(6).chunk(4))),
 "split(4) of (10,)": lambda L: L.stack([c.sum() for c in L.arange(10).split(4)]),
 "split([3,7]) of (10,)": lambda L: L.stack([c.sum() for c in L.arange(10).split([3,7])]),
 "split([3,6]) of (10,)": lambda L: L.stack([c.sum() for c in L.arange(10).split([3,6])]),
 "narrow(0,-3,2)": lambda L: L.arange(10).narrow(0,-3,2),
 "movedim((0,1),(1,0))": lambda L: L.arange(6).reshape(2,3).movedim((0,1),(1,0)),
 "permute(-1,0)": lambda L: L.arange(6).reshape(2,3).permute(-1,0),
 "transpose(-1,-2) of 1-d": lambda L: L.arange(3).transpose(-1,0),
 "t() of 1-d": lambda L: L.arange(3).t(),
 "T of 3-d": lambda L: L.arange(24).reshape(2,3,4).mT,
 "cat([(0,), (2,3)])": lambda L: L.cat([L.ones(0), L.ones(2,3)]),
 "cat([(2,3), (2,0)], 1)": lambda L: L.cat([L.ones(2,3), L.ones(2,0)], 1),
 "cat of ints and floats": lambda L: L.cat([L.ones(2, dtype=L.int64), L.ones(2)]),
 "stack of 0-d": lambda L: L.stack([L.tensor(1), L.tensor(2)]),
 "stack(dim=-1)": lambda L: L.stack([L.ones(2), L.zeros(2)], dim=-1),
 "x[::-1]": lambda L: L.arange(5)[::-1],
 "x[5:2]": lambda L: L.arange(5)[5:2],
 "x[-10:]": lambda L: L.arange(5)[-10:],
 "x[None, ..., None]": lambda L: L.arange(6).reshape(2,3)[None, ..., None],
 "x[[0,0,1]]": lambda L: L.arange(6).reshape(2,3)[[0,0,1]],
 "x[:, [2,0]]": lambda L: L.arange(6).reshape(2,3)[:, [2,0]],
 "x[[0,1],[2,0]]": lambda L: L.arange(6).reshape(2,3)[[0,1],[2,0]],
 "x[x>2]": lambda L: (lambda x: x[x > 2])(L.arange(6).reshape(2,3)),
 "x[[True,False]]": lambda L: L.arange(6).reshape(2,3)[[True, False]],
 "x[1, [0,2]]": lambda L: L.arange(6).reshape(2,3)[1, [0,2]],
 "x[[0],:,[1]] adv split": lambda L: L.arange(24).reshape(2,3,4)[[0,1],:,[1,2]],
 "x[5] oob": lambda L: L.arange(5)[5],
 "x[-6] oob": lambda L: L.arange(5)[-6],
 "x[2.0]": lambda L: L.arange(5)[2.0],
 "x[tensor(2)]": lambda L: L.arange(5)[L.tensor(2)],
 "x[tensor([[0,1]])]": lambda L: L.arange(5)[L.tensor([[0,1]])],
 "unbind(1)": lambda L: L.stack(L.arange(6).reshape(2,3).unbind(1)),
 "roll(1) no dim": lambda L: L.arange(6).reshape(2,3).roll(1),
 "flip(0,1)": lambda L: L.arange(6).reshape(2,3).flip(0,1),
 "rot90": lambda L: L.arange(6).reshape(2,3).rot90(),
 "diag(1-d, 1)": lambda L: L.diag(L.arange(3), 1),
 "diagonal(offset=-1)": lambda L: L.arange(9).reshape(3,3).diagonal(-1),
 "tril(-1)": lambda L: L.arange(9).reshape(3,3).tril(-1),
 "triu(5)": lambda L: L.arange(9).reshape(3,3).triu(5),
 "broadcast_to((2,3)) of (3,)": lambda L: L.broadcast_to(L.arange(3), (2,3)),
 "meshgrid ij": lambda L: L.stack(L.meshgrid(L.arange(2), L.arange(3), indexing="ij")),
 "meshgrid xy": lambda L: L.stack(L.meshgrid(L.arange(2), L.arange(3), indexing="xy")),
 "repeat_interleave(2)": lambda L: L.arange(3).repeat_interleave(2),
 "repeat_interleave(tensor)": lambda L: L.arange(3).repeat_interleave(L.tensor([1,0,2])),
 "gather neg idx": lambda L: L.arange(6).reshape(2,3).gather(1, L.tensor([[-1],[0]])),
 "take neg": lambda L: L.take(L.arange(6), L.tensor([-1])),
 "index_select neg": lambda L: L.arange(6).index_select(0, L.tensor([-1])),
 "unfold(0,2,1)": lambda L: L.arange(5).unfold(0,2,1),
 "new_zeros": lambda L: L.ones(2, dtype=L.int32).new_zeros(3),
 "new_tensor": lambda L: L.ones(2, dtype=L.int32).new_tensor([1.5]),
 "new_ones dtype": lambda L: L.ones(2, dtype=L.float16).new_ones((2,)),
 "type_as": lambda L: L.ones(2).type_as(L.ones(1, dtype=L.int64)),
 "view_as": lambda L: L.arange(6).view_as(L.ones(2,3)),
 "sort stable desc": lambda L: L.tensor([3,1,3,2]).sort(descending=True).indices,
 "argsort": lambda L: L.tensor([3,1,3,2]).argsort(),
 "topk ties": lambda L: L.tensor([3,1,3,2]).topk(2).indices,
 "unique sorted": lambda L: L.tensor([3,1,3,2]).unique(),
 "unique_consecutive": lambda L: L.tensor([1,1,2,2,3,1]).unique_consecutive(),
 "searchsorted": lambda L: L.searchsorted(L.tensor([1,3,5]), L.tensor([0,3,6])),
 "bucketize right": lambda L: L.bucketize(L.tensor([1,3,5]), L.tensor([1,3]), right=True),
 "nonzero": lambda L: L.tensor([[0,1],[2,0]]).nonzero(),
 "where(cond)": lambda L: L.stack(L.where(L.tensor([[0,1],[2,0]]) > 0)),
}


def _outcome(lib, make):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = make(lib)
    except Exception as e:  # noqa: BLE001 - whether it raised is compared
        return ("raises", type(e).__name__)
    return (str(out.dtype).split(".")[-1], tuple(out.shape), np.asarray(out.tolist(), np.float64))


@pytest.mark.parametrize("name", list(CASES))
def test_a_shape_or_indexing_call_is_torchs(name):
    want, got = _outcome(torch, CASES[name]), _outcome(eager, CASES[name])
    assert want[0] == got[0], f"{name}: torch {want}, eager {got}"
    if want[0] != "raises":
        assert want[1] == got[1], f"{name}: torch shape {want[1]}, eager {got[1]}"
        np.testing.assert_array_equal(got[2], want[2], err_msg=name)
