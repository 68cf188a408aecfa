"""Tensor factories and dtype conversions against torch: the dtype torch infers from Python
and NumPy data (`tensor([1, 2.5])` is float32, `tensor([True, 1])` int64, a NumPy float64
array float64), the lengths and dtypes of arange/linspace/logspace, full's dtype from its
fill value, integer and bool conversions of out-of-range, negative and NaN values
(`tensor(-1, dtype=uint8)` is 255 as torch's c10 check allows, 300 raises), and the float
to integer casts (`tensor([1.7, -1.7]).long()` truncates). Random factories are compared by
dtype and shape (their values times 0).

Found by this test: tensor(-1, dtype=uint8) raised NumPy's OverflowError (torch: 255), and
tensor([-2.7], dtype=uint8) gave 254 and tensor([255.9], dtype=uint8) 255 (torch raises for
a Python float outside the integer dtype; a NumPy array is converted as .to() does).
"""
import warnings

import numpy as np
import pytest

from dualgrad import eager

torch = pytest.importorskip("torch")

FACTORIES = {
 "tensor([1,2.5])": lambda L: L.tensor([1, 2.5]),
 "tensor([True,1])": lambda L: L.tensor([True, 1]),
 "tensor([True,1.0])": lambda L: L.tensor([True, 1.0]),
 "tensor(3)": lambda L: L.tensor(3),
 "tensor(3.0)": lambda L: L.tensor(3.0),
 "tensor(True)": lambda L: L.tensor(True),
 "tensor([])": lambda L: L.tensor([]),
 "tensor([[]])": lambda L: L.tensor([[]]),
 "tensor(np.float64)": lambda L: L.tensor(np.array([1.5, 2.0])),
 "tensor(np.int32)": lambda L: L.tensor(np.array([1, 2], np.int32)),
 "tensor(np.float64 scalar)": lambda L: L.tensor(np.float64(1.5)),
 "tensor([np.float32(1.5)])": lambda L: L.tensor([np.float32(1.5), np.float32(2)]),
 "tensor([1,2],dtype=float16)": lambda L: L.tensor([1, 2], dtype=L.float16),
 "tensor(2**40)": lambda L: L.tensor(2**40),
 "tensor(1e300)": lambda L: L.tensor(1e300),
 "as_tensor([1,2])": lambda L: L.as_tensor([1, 2]),
 "as_tensor(np f64)": lambda L: L.as_tensor(np.array([1.5])),
 "from_numpy(np f16)": lambda L: L.from_numpy(np.array([1.5], np.float16)),
 "full((2,),3)": lambda L: L.full((2,), 3),
 "full((2,),True)": lambda L: L.full((2,), True),
 "full((2,),1.5)": lambda L: L.full((2,), 1.5),
 "full((2,),1.5,dtype=int64)": lambda L: L.full((2,), 1.5, dtype=L.int64),
 "arange(5)": lambda L: L.arange(5),
 "arange(5.0)": lambda L: L.arange(5.0),
 "arange(0,1,0.1)": lambda L: L.arange(0, 1, 0.1),
 "arange(1,2.5,0.5)": lambda L: L.arange(1, 2.5, 0.5),
 "arange(0,10,3,dtype=float32)": lambda L: L.arange(0, 10, 3, dtype=L.float32),
 "arange(-1.0,1.0,0.3)": lambda L: L.arange(-1.0, 1.0, 0.3),
 "arange(10, dtype=uint8)": lambda L: L.arange(10, dtype=L.uint8),
 "arange(0.5, 3, dtype=int64)": lambda L: L.arange(0.5, 3, dtype=L.int64),
 "linspace(0,1,5)": lambda L: L.linspace(0, 1, 5),
 "linspace(0,10,4,dtype=int64)": lambda L: L.linspace(0, 10, 4, dtype=L.int64),
 "linspace(-1,1,7,dtype=float16)": lambda L: L.linspace(-1, 1, 7, dtype=L.float16),
 "logspace(0,2,3)": lambda L: L.logspace(0, 2, 3),
 "logspace(0,2,3,base=2)": lambda L: L.logspace(0, 2, 3, base=2),
 "zeros(2,dtype=bool)": lambda L: L.zeros(2, dtype=L.bool),
 "ones_like(int tensor, dtype float)": lambda L: L.ones_like(L.tensor([1, 2]), dtype=L.float32),
 "full_like(int, 2.7)": lambda L: L.full_like(L.tensor([1, 2]), 2.7),
 "full_like(bool, 2)": lambda L: L.full_like(L.tensor([True]), 2),
 "zeros_like(f16)": lambda L: L.zeros_like(L.tensor([1.0], dtype=L.float16)),
 "eye(3,2)": lambda L: L.eye(3, 2),
 "eye(2,dtype=int64)": lambda L: L.eye(2, dtype=L.int64),
 "randint(0,5,(3,)).dtype": lambda L: L.randint(0, 5, (3,)) * 0,
 "randn(2,dtype=float64)*0": lambda L: L.randn(2, dtype=L.float64) * 0,
 "rand(2,dtype=float16)*0": lambda L: L.rand(2, dtype=L.float16) * 0,
 "randperm(4).sort": lambda L: L.randperm(4).sort().values,
 "tril_indices(3,3)": lambda L: L.tril_indices(3, 3),
 "triu_indices(3,3,1)": lambda L: L.triu_indices(3, 3, 1),
 "scalar_tensor(3)": lambda L: L.scalar_tensor(3),
 "tensor(-1, dtype=uint8)": lambda L: L.tensor(-1, dtype=L.uint8),
 "tensor([300], dtype=uint8)": lambda L: L.tensor([300], dtype=L.uint8),
 "tensor(2.7, dtype=int64)": lambda L: L.tensor(2.7, dtype=L.int64),
 "tensor([-2.7], dtype=uint8)": lambda L: L.tensor([-2.7], dtype=L.uint8),
 "tensor([2.7, 255.0], dtype=uint8)": lambda L: L.tensor([2.7, 255.0], dtype=L.uint8),
 "tensor([255.9], dtype=uint8)": lambda L: L.tensor([255.9], dtype=L.uint8),
 "tensor(inf, dtype=int32)": lambda L: L.tensor(float("inf"), dtype=L.int32),
 "tensor(np [-2.7], dtype=uint8)": lambda L: L.tensor(np.array([-2.7]), dtype=L.uint8),
 "tensor(nan, dtype=int32)": lambda L: L.tensor(float("nan"), dtype=L.int32),
 "tensor([1.5,2.5]).int()": lambda L: L.tensor([1.5, -2.5]).int(),
 "tensor([300.]).byte()": lambda L: L.tensor([300.0, -1.0]).byte(),
 "tensor([1e10]).int()": lambda L: L.tensor([1e10]).int(),
 "tensor([0.5]).bool()": lambda L: L.tensor([0.5, 0.0, -0.0]).bool(),
 "tensor([70000.]).half()": lambda L: L.tensor([70000.0, 1e-8]).half(),
 "tensor([257]).to(uint8)": lambda L: L.tensor([257, -1]).to(L.uint8),
 "tensor([1.7]).long()": lambda L: L.tensor([1.7, -1.7]).long(),
 "tensor(range(3))": lambda L: L.tensor(range(3)),
 "tensor((1,2))": lambda L: L.tensor((1, 2)),
 "tensor([[1],[2]])": lambda L: L.tensor([[1], [2]]),
 "tensor(list of 0d tensors)": lambda L: L.stack([L.tensor(1.0), L.tensor(2.0)]),
 "tensor([t.item(), 2])": lambda L: L.tensor([L.tensor(1.5).item(), 2]),
}


def _outcome(lib, make):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = make(lib)
    except Exception as e:  # noqa: BLE001 - whether it raised is compared
        return ("raises", type(e).__name__)
    dt = str(out.dtype).split(".")[-1]
    return (dt, tuple(out.shape), np.asarray(out.float().tolist() if dt == "bfloat16" else
                                             out.tolist(), np.float64))


@pytest.mark.parametrize("name", list(FACTORIES))
def test_a_factory_or_conversion_is_torchs(name):
    want, got = _outcome(torch, FACTORIES[name]), _outcome(eager, FACTORIES[name])
    assert want[0] == got[0], f"{name}: torch {want}, eager {got}"
    if want[0] != "raises":
        assert want[1] == got[1], f"{name}: torch shape {want[1]}, eager {got[1]}"
        np.testing.assert_array_equal(got[2], want[2], err_msg=name)
