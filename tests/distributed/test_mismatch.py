"""Issue 32: a model built with float64 on one rank and float32 on the other (or another
shape) is refused at DDP / FSDP construction with one clear RuntimeError on every rank that
names the tensor, both dtypes and both ranks; before, MPI_Test failed and MPI_Abort ended
the job ("Other MPI error")."""
import pytest

from .mpi import ok, run

pytestmark = pytest.mark.usefixtures("hang_guard")


@pytest.mark.parametrize("wrapper", ["ddp", "fsdp"])
def test_a_dtype_mismatch_names_the_parameter_dtypes_and_ranks(wrapper):
    out = ok(run(["mismatch.py", wrapper, "dtype"], timeout=90))
    for rank in (0, 1):
        assert f"rank {rank} raised: " in out and f"rank {rank} done" in out, out
    line = next(ln for ln in out.splitlines() if ln.startswith("rank 0 raised"))
    assert "'0.weight' is (3, 4) float32 on rank 0 but (3, 4) float64 on rank 1" in line, line
    assert "MPI" not in out


def test_a_shape_mismatch_names_the_parameter_shapes_and_ranks():
    out = ok(run(["mismatch.py", "ddp", "shape"], timeout=90))
    assert "'2.weight' is (1, 3) float32 on rank 0 but (2, 3) float32 on rank 1" in out, out
