"""eager.save / eager.load: safetensors round trips, atomic writes, and no unpickling ever."""
import os
import pathlib
import pickle
from collections import OrderedDict

import numpy as np
import pytest

from dualgrad import eager
import dualgrad.eager.serialization
from dualgrad.eager import nn


def test_round_trip_keeps_names_order_dtypes_shapes_and_values(tmp_path):
    rng = np.random.default_rng(0)
    state = OrderedDict([
        ("layer.weight", eager.tensor(rng.standard_normal((3, 4)).astype(np.float32))),
        ("layer.bias", eager.tensor(rng.standard_normal(4), dtype=np.float64)),
        ("steps", eager.tensor(np.array([1, 2, 2**40], dtype=np.int64))),
        ("scalar", eager.tensor(np.float32(2.5))),
        ("mask", eager.tensor(np.array([True, False]))),
        ("transposed", eager.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).T),
        ("raw array", np.arange(4, dtype=np.int32)),
    ])
    path = tmp_path / "ckpt.safetensors"
    eager.save(state, path)
    loaded = eager.load(path)
    assert isinstance(loaded, OrderedDict)
    assert set(loaded) == set(state)
    for name, t in state.items():
        got = loaded[name]
        want = np.asarray(t.data if isinstance(t, eager.Tensor) else t)
        assert isinstance(got, eager.Tensor) and not got.requires_grad
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)


def test_model_state_dict_round_trip(tmp_path):
    eager.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    eager.manual_seed(1)
    b = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    path = str(tmp_path / "model.safetensors")       # a str path works as well as a Path
    eager.save(a.state_dict(), path)
    b.load_state_dict(eager.load(path))
    x = eager.randn(5, 4)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_save_and_load_through_a_bytes_buffer_as_torch_allows():
    import io
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    opt = eager.optim.Adam(model.parameters())
    model(eager.randn(2, 4)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    eager.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, buf)
    buf.seek(0)
    got = eager.load(buf)
    assert got["epoch"] == 3 and list(got["model"]) == list(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(got["model"][k].numpy(), v.numpy())
    with pytest.raises(ValueError, match="not a valid safetensors"):
        eager.load(io.BytesIO(b"\x80\x02 a pickle"))


def test_an_interrupted_write_leaves_the_old_file_intact_and_no_temp_files(tmp_path,
                                                                            monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    eager.save({"w": eager.ones(3)}, path)
    old_bytes = path.read_bytes()
    real_save_file = eager.serialization.write_safetensors

    def crash_midway(filename, tensors, metadata=None):
        real_save_file(filename, tensors, metadata=metadata)
        with open(filename, "r+b") as f:          # half of the bytes are written, then: crash
            f.truncate(os.path.getsize(filename) // 2)
        raise KeyboardInterrupt("simulated crash in the middle of the write")

    monkeypatch.setattr(eager.serialization, "write_safetensors", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        eager.save({"w": eager.zeros(1000)}, path)
    assert path.read_bytes() == old_bytes
    assert sorted(os.listdir(tmp_path)) == ["ckpt.safetensors"]
    np.testing.assert_array_equal(eager.load(path)["w"].numpy(), np.ones(3, np.float32))


def test_a_failed_first_write_leaves_nothing(tmp_path, monkeypatch):
    def fail(filename, tensors, metadata=None):
        pathlib.Path(filename).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(eager.serialization, "write_safetensors", fail)
    with pytest.raises(OSError, match="disk full"):
        eager.save({"w": eager.ones(2)}, tmp_path / "new.safetensors")
    assert os.listdir(tmp_path) == []


class _Trap:
    """Unpickling this writes a marker file: proof that code from the file ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (pathlib.Path.write_text, (pathlib.Path(self.marker), "code ran"))


def test_a_pickle_file_is_refused_without_being_unpickled(tmp_path):
    marker = tmp_path / "MARKER"
    payload = pickle.dumps({"weight": np.ones((2, 2), np.float32), "trap": _Trap(marker)})
    # the trap is real: unpickling this payload does write the marker
    pickle.loads(payload)
    assert marker.exists()
    marker.unlink()

    path = tmp_path / "model.pt"
    path.write_bytes(payload)
    with pytest.raises(ValueError, match=r"not a valid safetensors file.*never unpickles"):
        eager.load(path)
    assert not marker.exists()


def test_a_torch_checkpoint_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(ValueError, match="never unpickles"):
        eager.load(path)


def test_truncated_and_missing_files(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    eager.save({"w": eager.ones(100)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        eager.load(path)
    with pytest.raises(FileNotFoundError):
        eager.load(tmp_path / "nope.safetensors")


@pytest.mark.parametrize("value", [3, 2.5, "text", [1.0, 2.0], None, {"nested": 1},
                                   (1, float("inf")), {0: {"step": 3}}, True], ids=repr)
def test_numbers_strings_and_nesting_round_trip(tmp_path, value):
    path = tmp_path / "x.pt"
    eager.save({"w": eager.ones(2), "extra": value}, path)
    loaded = eager.load(path)
    assert loaded["extra"] == value and type(loaded["extra"]) is type(value)
    assert loaded["w"].tolist() == [1.0, 1.0]
    assert os.listdir(tmp_path) == ["x.pt"]


@pytest.mark.parametrize("value", [nn.Linear(2, 2), lambda x: x, object()],
                         ids=["module", "lambda", "object"])   # NOTE: no addresses in ids
def test_save_refuses_what_only_pickle_could_store(tmp_path, value):
    with pytest.raises(TypeError, match=r"'?extra'? is a .*safetensors cannot store"):
        eager.save({"w": eager.ones(2), "extra": value}, tmp_path / "x.safetensors")
    assert os.listdir(tmp_path) == []


def test_optimizer_checkpoint_dict_round_trips(tmp_path):
    model = nn.Linear(3, 2)
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    model(eager.ones(4, 3)).sum().backward()
    opt.step()
    ckpt = {"epoch": 7, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "loss": 0.25}
    eager.save(ckpt, tmp_path / "checkpoint.tar")
    back = eager.load(tmp_path / "checkpoint.tar", map_location="cpu", weights_only=True)
    assert back["epoch"] == 7 and back["loss"] == 0.25
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    np.testing.assert_array_equal(back["optimizer"]["state"][1]["exp_avg"].numpy(),
                                  opt.state[model.bias]["exp_avg"].numpy())
    model.load_state_dict(back["model"])
    opt.load_state_dict(back["optimizer"])
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        eager.load(tmp_path / "checkpoint.tar", map_location="cuda")


def test_a_single_tensor_round_trips(tmp_path):
    eager.save(eager.arange(3), tmp_path / "t.pt")
    assert eager.load(tmp_path / "t.pt").tolist() == [0, 1, 2]


def test_save_refuses_non_string_keys(tmp_path):
    with pytest.raises(TypeError, match="keys must be strings or integers"):
        eager.save({(1, 2): eager.ones(2)}, tmp_path / "x.safetensors")
    assert os.listdir(tmp_path) == []
