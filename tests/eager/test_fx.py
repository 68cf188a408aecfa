"""torch.fx on dualgrad.eager: the same programs traced by real torch.fx and dualgrad.eager.fx,
from the same weights; graphs compared op by op (targets by name), outputs by value."""
from __future__ import annotations


import numpy as np
import pytest

from dualgrad import eager
from dualgrad.eager import fx as dfx
from tests.eager._compare import as_numpy, load, state

torch = pytest.importorskip("torch")
tfx = pytest.importorskip("torch.fx")


def libs():
    """(torch, nn, F, fx) of each library."""
    return [(torch, torch.nn, torch.nn.functional, tfx),
            (eager, eager.nn, eager.nn.functional, dfx)]


def convnet(torch, nn, F):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 6), nn.ReLU())
            self.scale = nn.Parameter(torch.ones(6))
            self.register_buffer("shift", torch.zeros(6) + 0.5)

        def forward(self, x):
            y = self.block(x)
            y = self.head(y) * self.scale + self.shift
            a, b = y.chunk(2, dim=1)
            z = torch.cat([torch.relu(a), F.gelu(b)], dim=1).view(-1, 6)
            return z.sum(dim=1, keepdim=True) + z.shape[1] + torch.tanh(z)
    return Net


def signature(gm):
    """(op, target name) per node: call_function targets by their function's name."""
    return [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
            for n in gm.graph.nodes]


def pair(build, seed=0):
    """The model in both libraries with torch's initial weights."""
    torch.manual_seed(seed)
    t = build(*libs()[0][:3])()
    d = build(*libs()[1][:3])()
    load(eager, d, state(t))
    return t, d


def inputs(*shape, seed=1):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(x), eager.tensor(x)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(as_numpy(a), as_numpy(b), rtol=tol, atol=tol)


def test_trace_records_torch_graph_and_runs_the_same():
    t, d = pair(convnet)
    t.eval(), d.eval()
    tg, dg = tfx.symbolic_trace(t), dfx.symbolic_trace(d)
    assert signature(dg) == signature(tg)
    assert [n.name for n in dg.graph.nodes] == [n.name for n in tg.graph.nodes]
    stacks = [[list(n.meta.get("nn_module_stack", {})) for n in gm.graph.nodes] for gm in (dg, tg)]
    assert stacks[0] == stacks[1] and ["block"] in stacks[0]
    assert sorted(dg.state_dict()) == sorted(tg.state_dict())     # shift is a buffer there too
    xt, xd = inputs(2, 3, 5, 5)
    close(dg(xd), tg(xt))
    close(dg(xd), d(xd))
    relu = next(n for n in dg.graph.nodes if n.name == "relu")
    assert relu.target is eager.nn.functional.relu     # the function itself, not a wrapper
    cat = next(n for n in dg.graph.nodes if n.name == "cat")
    assert cat.target is eager.cat and cat.kwargs == {"dim": 1}
    assert [u.name for u in cat.users] == ["view"]
    assert [a.name for a in cat.all_input_nodes] == ["relu_1", "gelu"]
    assert "eager.cat([relu_1, gelu], dim = 1)" in dg.code
    assert type(dg).__name__ == "Net"
    assert dg.block.conv is d.block.conv                 # the same layer objects, as torch


def test_graph_edit_relu_to_gelu_and_dead_code():
    t, d = pair(convnet)
    t.eval(), d.eval()
    xt, xd = inputs(2, 3, 5, 5)
    outs = []
    for (lib, nn, F, fx), model, x in zip(libs(), (t, d), (xt, xd)):
        gm = fx.symbolic_trace(model)
        for n in list(gm.graph.nodes):
            if n.op == "call_function" and n.target in (F.relu, lib.relu):
                with gm.graph.inserting_after(n):
                    new = gm.graph.call_function(F.gelu, n.args, {"approximate": "tanh"})
                n.replace_all_uses_with(new)
                gm.graph.erase_node(n)
        with gm.graph.inserting_before(gm.graph.output_node()):
            first = next(iter(gm.graph.nodes))
            gm.graph.create_node("call_function", lib.sigmoid, (first,), {})   # read by nothing
        assert gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
        outs.append((signature(gm), gm(x)))
    assert outs[1][0] == outs[0][0]
    close(outs[1][1], outs[0][1], 1e-4)


def fuse_conv_bn(lib, nn, gm):
    """The conv+bn folding users write with fx (eval mode): bn's statistics go into conv."""
    modules = dict(gm.named_modules())
    for n in list(gm.graph.nodes):
        if n.op != "call_module" or not isinstance(modules[n.target], nn.BatchNorm2d):
            continue
        src = n.args[0]
        if src.op != "call_module" or not isinstance(modules[src.target], nn.Conv2d):
            continue
        conv, bn = modules[src.target], modules[n.target]
        w, b = as_numpy(conv.weight), as_numpy(conv.bias)
        scale = as_numpy(bn.weight) / np.sqrt(as_numpy(bn.running_var) + bn.eps)
        conv.weight.data = lib.tensor(w * scale[:, None, None, None])
        conv.bias.data = lib.tensor((b - as_numpy(bn.running_mean)) * scale + as_numpy(bn.bias))
        n.replace_all_uses_with(src)
        gm.graph.erase_node(n)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def test_conv_bn_fusion_pass():
    t, d = pair(convnet)
    rng = np.random.default_rng(3)
    stats = {"block.bn.running_mean": rng.standard_normal(4).astype(np.float32),
             "block.bn.running_var": rng.uniform(0.5, 2, 4).astype(np.float32)}
    for m, lib in ((t, torch), (d, eager)):
        m.load_state_dict({**m.state_dict(), **{k: lib.tensor(v) for k, v in stats.items()}})
        m.eval()
    xt, xd = inputs(2, 3, 5, 5)
    before = as_numpy(d(xd))
    results = []
    for (lib, nn, F, fx), model, x in zip(libs(), (t, d), (xt, xd)):
        gm = fuse_conv_bn(lib, nn, fx.symbolic_trace(model))
        assert not hasattr(gm.block, "bn")
        results.append((signature(gm), gm(x)))
    assert results[1][0] == results[0][0]
    close(results[1][1], results[0][1], 1e-4)
    close(results[1][1], before, 1e-4)


def both(fn):
    """fn(torch, nn, F, fx) in each library: [torch's result, dualgrad's]."""
    return [fn(*lib) for lib in libs()]


def test_replace_pattern_same_rewrite_and_outputs():
    def run(lib, nn, F, fx):
        def model(x, y):
            a = lib.relu(x + y)
            b = lib.relu(a * 2 + y)
            return a - b

        def pattern(u, v):
            return lib.relu(u + v)

        def replacement(u, v):
            return lib.sigmoid(u) * v

        gm = fx.symbolic_trace(model)
        matches = fx.replace_pattern(gm, pattern, replacement)
        gm.graph.lint()
        x = lib.tensor(np.linspace(-2, 2, 6, dtype=np.float32))
        return len(matches), [m.anchor.name for m in matches], signature(gm), gm(x, x * 0.5)
    (nt, at, st, yt), (nd, ad, sd, yd) = both(run)
    assert (nd, ad, sd) == (nt, at, st) and nd == 2
    close(yd, yt)


def test_leaf_module_override_and_tracer_subclass():
    def run(lib, nn, F, fx):
        class Act(nn.Module):
            def forward(self, x):
                return lib.tanh(x) * 2

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = Act()
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                return self.act(self.fc(x))

        class Keep(fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return isinstance(m, Act) or (qualname != "fc"
                                              and super().is_leaf_module(m, qualname))
        lib.manual_seed(0)
        net = Net()
        g = Keep().trace(net)
        return signature(fx.GraphModule(net, g)), signature(fx.symbolic_trace(net))
    assert both(run)[1] == both(run)[0]
    kept, default = both(run)[1]
    assert ("call_module", "act") in kept and ("call_method", "linear") not in kept
    assert ("call_module", "fc") not in kept          # fc is traced into, as torch does
    assert ("call_function", "tanh") in default


def test_concrete_args_specialise_and_check():
    def run(lib, nn, F, fx):
        def f(x, training):
            if training:
                return x * 2
            return x - 1
        gm = fx.symbolic_trace(f, concrete_args={"training": False})
        x = lib.ones(2)
        out = gm(x, False)
        with pytest.raises(AssertionError, match="specialized to have value False"):
            gm(x, True)
        return signature(gm), out
    (st, yt), (sd, yd) = both(run)
    assert [s for s in sd if s[1] != "_assert"] == [s for s in st if s[1] != "_assert"]
    close(yd, yt)


def test_control_flow_on_a_proxy_names_the_line():
    class Net(eager.nn.Module):
        def forward(self, x):
            if x.sum() > 0:          # the line the error names
                return x
            return -x
    with pytest.raises(dfx.proxy.TraceError,
                       match=r"symbolically traced variables cannot be used as inputs to "
                             r"control flow \(at .*test_fx.py:\d+\)") as err:
        dfx.symbolic_trace(Net())
    line = int(str(err.value).rsplit(":", 1)[1].rstrip(")"))
    import inspect
    src, first = inspect.getsourcelines(Net.forward)
    assert "the line the error names" in src[line - first]
    with pytest.raises(tfx.proxy.TraceError, match="cannot be used as inputs to control flow"):
        tfx.symbolic_trace(type("TNet", (torch.nn.Module,), {"forward": Net.forward})())


def shifted(x, k):
    """A function wrap() keeps as one node (it loops over a Python int)."""
    for _ in range(k):
        x = x + 1
    return x


dfx.wrap("shifted")
tfx.wrap("shifted")


def test_wrap_keeps_a_function_as_one_node_and_patches_are_restored():
    relu_before, call_before = eager.relu, eager.nn.Module.__call__

    def run(lib, nn, F, fx):
        def f(x):
            return shifted(lib.relu(x), 3) * len_free(x)

        def len_free(x):
            return 2
        gm = fx.symbolic_trace(f)
        return signature(gm), gm(lib.tensor([-1.0, 2.0]))
    (st, yt), (sd, yd) = both(run)
    assert sd == st and ("call_function", "shifted") in sd
    close(yd, yt)
    assert shifted is globals()["shifted"] and not hasattr(shifted, "__fx_wrapped__")
    assert eager.relu is relu_before and eager.nn.Module.__call__ is call_before


def test_names_imported_from_eager_are_recorded_too():
    from dualgrad.eager.nn.functional import gelu     # a name the traced closure captures
    gm = dfx.symbolic_trace(lambda x: gelu(x) + eager.ones(2))
    assert signature(gm) == [("placeholder", "x"), ("call_function", "gelu"),
                             ("get_attr", "_tensor_constant0"), ("call_function", "add"),
                             ("output", "output")]
    close(gm(eager.tensor([1.0, -1.0])), eager.nn.functional.gelu(eager.tensor([1.0, -1.0])) + 1)


def test_interpreter_shape_propagation_and_transformer():
    t, d = pair(convnet)
    t.eval(), d.eval()
    xt, xd = inputs(2, 3, 5, 5)

    def shapes(fx, gm, x):
        class ShapeProp(fx.Interpreter):
            def run_node(self, n):
                out = super().run_node(n)
                n.meta["shape"] = tuple(out.shape) if hasattr(out, "shape") else None
                return out
        out = ShapeProp(gm).run(x)
        return [n.meta["shape"] for n in gm.graph.nodes], out
    st, yt = shapes(tfx, tfx.symbolic_trace(t), xt)
    sd, yd = shapes(dfx, dfx.symbolic_trace(d), xd)
    assert sd == st
    close(yd, yt)

    def swap(lib, fx, gm):
        class ReluToSigmoid(fx.Transformer):
            def call_function(self, target, args, kwargs):
                if getattr(target, "__name__", "") == "relu":
                    target, kwargs = lib.sigmoid, {}
                return super().call_function(target, args, kwargs)
        return ReluToSigmoid(gm).transform()
    gt, gd = swap(torch, tfx, tfx.symbolic_trace(t)), swap(eager, dfx, dfx.symbolic_trace(d))
    assert signature(gd) == signature(gt)
    close(gd(xd), gt(xt))


def test_graph_built_by_hand_with_proxies():
    def run(lib, nn, F, fx):
        g = fx.Graph()
        tracer = fx.proxy.GraphAppendingTracer(g)
        x = fx.Proxy(g.placeholder("x"), tracer)
        y = fx.Proxy(g.create_node("call_function", lib.relu, (x.node,)), tracer)
        z = (y * 3).mean(dim=0)
        g.output(z.node)
        g.lint()
        moved = fx.node.map_arg((x.node, [z.node], {"k": 1}), lambda n: n.name)
        return [n.format_node() for n in g.nodes], moved, fx.GraphModule({}, g)(
            lib.tensor([[1.0, -2.0], [3.0, 4.0]]))
    (ft, mt, yt), (fd, md, yd) = both(run)
    assert md == mt == ("x", ["mean"], {"k": 1})
    assert [line.split("[target=")[0] for line in fd] == [line.split("[target=")[0] for line in ft]
    close(yd, yt)


def test_lint_and_erase_refuse_broken_graphs():
    g = dfx.Graph()
    x = g.placeholder("x")
    y = g.call_function(eager.relu, (x,))
    g.output(y)
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(x)
    with g.inserting_before(y):
        z = g.call_function(eager.neg, (x,))
    y.args = (z,)
    z.args = (y,)                                   # now z reads y, defined after it
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def test_eager_constant_meets_proxy_through_bind():
    gm = dfx.symbolic_trace(lambda x: eager.tensor([1.0, 2.0]) * x)
    assert signature(gm)[1:3] == [("get_attr", "_tensor_constant0"), ("call_function", "mul")]
    close(gm(eager.tensor([3.0, 4.0])), [3.0, 8.0])


def test_other_threads_compute_while_a_trace_runs_and_errors_restore_everything():
    import threading
    seen = {}
    layer = eager.nn.Linear(2, 2)

    def other():
        t = eager.tensor([[-1.0, 2.0]])
        seen["relu"], seen["layer"] = eager.relu(t), layer(t)

    def f(x):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()                      # the trace's patches are in place meanwhile
        return eager.relu(x)
    gm = dfx.symbolic_trace(f)
    assert isinstance(seen["relu"], eager.Tensor) and seen["relu"].tolist() == [[0.0, 2.0]]
    assert isinstance(seen["layer"], eager.Tensor)
    assert signature(gm) == [("placeholder", "x"), ("call_function", "relu"), ("output", "output")]
    relu, call, getattr_ = eager.relu, eager.nn.Module.__call__, eager.nn.Module.__getattr__
    with pytest.raises(dfx.proxy.TraceError):
        dfx.symbolic_trace(lambda x: eager.relu(x) if x.sum() else x)
    restored = (eager.relu, eager.nn.Module.__call__, eager.nn.Module.__getattr__)
    assert restored == (relu, call, getattr_)


def test_shape_prop_as_torch():
    from dualgrad.eager.fx.passes.shape_prop import ShapeProp
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp
    t, d = pair(convnet)
    xt, xd = inputs(2, 3, 5, 5)
    metas = []
    for gm, prop, x in ((tfx.symbolic_trace(t), TorchShapeProp, xt),
                        (dfx.symbolic_trace(d), ShapeProp, xd)):
        prop(gm).propagate(x)
        found = [(n.name, n.meta.get("tensor_meta")) for n in gm.graph.nodes]
        metas.append([(name, tuple(m.shape), str(m.dtype).replace("torch.", ""), m.requires_grad)
                      for name, m in found if hasattr(m, "shape")])
    assert metas[1] == metas[0] and len(metas[0]) > 10


def attention_block(torch, nn, F):
    import math

    class SelfAttention(nn.Module):
        def __init__(self, dim=8, heads=2):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.norm = nn.LayerNorm(dim)
            self.mlp = nn.ModuleList([nn.Linear(dim, 16), nn.GELU(), nn.Linear(16, dim)])

        def forward(self, x, mask):
            b, t, c = x.shape
            q, k, v = self.qkv(self.norm(x)).split(c, dim=-1)
            q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            k = k.reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
            v = v.view(b, t, self.heads, -1).transpose(1, 2)
            att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            att = att.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            y = y.transpose(1, 2).contiguous().view(b, t, c)
            x = x + self.proj(y)
            h = x
            for layer in self.mlp:
                h = layer(h)
            return x + F.dropout(h, p=0.1, training=self.training), att.size(-1)
    return SelfAttention


def test_attention_block_graph_and_outputs():
    t, d = pair(attention_block)
    t.eval(), d.eval()
    tg, dg = tfx.symbolic_trace(t), dfx.symbolic_trace(d)
    assert signature(dg) == signature(tg)
    assert [n.name for n in dg.graph.nodes] == [n.name for n in tg.graph.nodes]
    xt, xd = inputs(2, 5, 8)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=np.int64)
    (yt, nt), (yd, nd) = tg(xt, torch.tensor(mask)), dg(xd, eager.tensor(mask))
    close(yd, yt, 1e-5)
    assert nd == nt == 5


def test_two_threads_tracing_at_once_each_get_their_graph_and_everything_is_restored():
    import threading
    relu, call = eager.relu, eager.nn.Module.__call__
    both_in, first_done, graphs = threading.Barrier(2, timeout=30), threading.Event(), {}

    class Net(eager.nn.Module):
        def __init__(self, key):
            super().__init__()
            self.key = key
            self.layer = eager.nn.Linear(2, 2)

        def forward(self, x):
            both_in.wait()                # both traces are running here
            if self.key == 1:             # the second goes on after the first has ended
                assert first_done.wait(30)
            return eager.relu(self.layer(x))

    def trace(key):
        try:
            graphs[key] = signature(dfx.symbolic_trace(Net(key)))
        finally:
            first_done.set()
    threads = [threading.Thread(target=trace, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    want = [("placeholder", "x"), ("call_module", "layer"), ("call_function", "relu"),
            ("output", "output")]
    assert graphs == {0: want, 1: want}
    assert eager.relu is relu and eager.nn.Module.__call__ is call


def test_an_error_in_a_graph_module_names_the_node_and_the_traced_line():
    class Net(eager.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = eager.nn.Linear(3, 4)

        def forward(self, x):
            return self.fc(x) @ x          # the line the note names

    gm = dfx.symbolic_trace(Net())
    with pytest.raises(eager.ShapeError, match="cannot multiply") as err:
        gm(eager.ones(2, 3))
    note = "\n".join(err.value.__notes__)
    assert "While executing node matmul (call_function operator.matmul), traced at " in note
    import inspect
    src, first = inspect.getsourcelines(Net.forward)
    line = int(note.split("test_fx.py:")[1].split(",")[0])
    assert "the line the note names" in src[line - first]
    with pytest.raises(eager.ShapeError) as err:
        dfx.Interpreter(gm).run(eager.ones(2, 3))
    assert "node matmul" in "\n".join(err.value.__notes__)


def test_replace_pattern_refuses_a_pattern_of_several_outputs():
    gm = dfx.symbolic_trace(lambda x: eager.relu(x) + eager.sigmoid(x))
    with pytest.raises(NotImplementedError, match="return one value"):
        dfx.replace_pattern(gm, lambda a: (eager.relu(a), eager.sigmoid(a)), lambda a: (a, a))


FX_SCRIPT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx import symbolic_trace, replace_pattern

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(self.fc(x)) * 2

torch.manual_seed(0)
net = Net()
gm = symbolic_trace(net)
x = torch.randn(3, 4)
replace_pattern(gm, lambda a: F.relu(a), lambda a: torch.sigmoid(a))
assert torch.allclose(gm(x), torch.sigmoid(net.fc(x)) * 2)
print([n.op for n in gm.graph.nodes])
'''


def test_an_unmodified_fx_script_runs_as_torch(tmp_path):
    import subprocess
    from tests.test_programs_run_as import DUALGRAD
    script = tmp_path / "fx_script.py"
    script.write_text(FX_SCRIPT)
    out = subprocess.run(DUALGRAD + ["run", "--as", "torch", str(script)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ops = "['placeholder', 'call_module', 'call_function', 'call_function', 'output']"
    assert out.stdout.strip() == ops     # what the script prints under real torch


def test_a_helper_module_s_own_imports_are_recorded():
    import types
    helper = types.ModuleType("helper")    # a user's utils.py, imported by the model's file
    exec("from dualgrad.eager.nn.functional import gelu, softmax\n"
         "def act(x):\n"
         "    return softmax(gelu(x), dim=-1)\n", vars(helper))
    gm = dfx.symbolic_trace(lambda x: helper.act(x))
    assert signature(gm)[1:3] == [("call_function", "gelu"), ("call_function", "softmax")]
    x = eager.randn(3, 4)
    close(gm(x), helper.act(x))
    assert helper.gelu is eager.nn.functional.gelu        # put back after the trace
