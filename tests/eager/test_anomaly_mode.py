"""torch.autograd's anomaly mode against torch: with it on, a backward rule that returns NaN
raises naming the op and the output (torch names its Node, 'SqrtBackward0'; dualgrad the op,
'sqrt'); off, or with check_nan=False, the NaN flows into the gradient as usual."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from dualgrad import eager  # noqa: E402


def _nan_backward(lib):
    x = lib.tensor([0.0, 4.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()      # d sqrt at 0 is inf, times 0 is NaN
    return x.grad


@pytest.mark.parametrize("lib", [torch, eager], ids=["torch", "dualgrad"])
def test_detect_anomaly_raises_on_a_nan_gradient(lib):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match=r"returned nan values in its 0th output"):
            with lib.autograd.detect_anomaly():
                _nan_backward(lib)
    assert any("Anomaly Detection has been enabled" in str(w.message) for w in seen)
    assert not lib.is_anomaly_enabled()
    assert np.isnan(_nan_backward(lib).numpy()[0])          # off again: NaN flows


@pytest.mark.parametrize("lib", [torch, eager], ids=["torch", "dualgrad"])
def test_set_detect_anomaly_as_a_call_and_as_a_context(lib):
    lib.autograd.set_detect_anomaly(True)
    try:
        assert lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="nan values"):
            lib.autograd.grad((x.sqrt() * 0).sum(), x)
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert np.isnan(_nan_backward(lib).numpy()[0])
        with lib.autograd.set_detect_anomaly(False):
            assert not lib.is_anomaly_enabled()
        assert lib.is_anomaly_enabled()
    finally:
        lib.autograd.set_detect_anomaly(False)
    assert not lib.is_anomaly_enabled()


def test_anomaly_mode_leaves_finite_gradients_alone():
    grads = []
    for lib in (torch, eager):
        x = lib.tensor([1.0, 4.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                (x.sqrt() * x).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
