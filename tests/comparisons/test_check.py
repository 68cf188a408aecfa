"""`dualgrad check`: bug scripts written as a new user would, outside the catalogue.

Each script is a small training script on random NumPy data (no dataset download), written
to a temporary file with its bug on the line marked `# BUG`; the check must report it at
that line, before any data is computed, or name the branch it could not explore. Seven
scripts, each checked in milliseconds: the module takes a few seconds.
"""
from __future__ import annotations

import textwrap

import pytest

from dualgrad.comparisons import cli
from dualgrad.comparisons.check_cli import run_script, script_kind

HEAD = """\
import numpy as np
from dualgrad import eager
from dualgrad.eager import nn, optim
from dualgrad.eager.nn import functional as F
from dualgrad.eager.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)
"""

SCRIPTS = {
    # a DataLoader over a TensorDataset, the layer sizes disagree
    "loader_mlp": """
X = eager.from_numpy(rng.standard_normal((200, 20)).astype("float32"))
Y = eager.from_numpy(rng.integers(0, 3, 200))
loader = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(46, 3))  # BUG: 64, not 46
opt = optim.Adam(model.parameters())
for epoch in range(3):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
    # channel-last images (N, H, W, C) fed to a channel-first Conv2d
    "channels_last": """
images = rng.standard_normal((64, 12, 12, 3)).astype("float32")      # NHWC, as from PIL
labels = rng.integers(0, 5, 64)
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                    nn.Linear(8 * 12 * 12, 5))
opt = optim.SGD(net.parameters(), lr=0.1)
for i in range(0, 64, 16):
    x = eager.tensor(images[i:i + 16])
    y = eager.tensor(labels[i:i + 16])
    out = net(x)  # BUG: Conv2d wants (N, C, H, W): x.permute(0, 3, 1, 2)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    # an RNN's hidden state made with a hard-coded batch size
    "hidden_batch": """
BATCH = 32
seqs = rng.standard_normal((96, 10, 4)).astype("float32")
cell = nn.GRUCell(4, 16)
head = nn.Linear(16, 1)
opt = optim.Adam(list(cell.parameters()) + list(head.parameters()))
for i in range(0, 96, 24):
    x = eager.from_numpy(seqs[i:i + 24])
    h = eager.zeros(BATCH, 16)
    for t in range(x.shape[1]):
        h = cell(x[:, t], h)  # BUG: h was made for BATCH rows, the batch has 24
    loss = head(h).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    # a hard-coded sequence length in an index
    "seq_index": """
seqs = rng.standard_normal((64, 8, 5)).astype("float32")
lstm = nn.LSTM(5, 12, batch_first=True)
fc = nn.Linear(12, 1)
opt = optim.Adam(list(lstm.parameters()) + list(fc.parameters()))
for i in range(0, 64, 16):
    x = eager.from_numpy(seqs[i:i + 16])
    out, _ = lstm(x)
    last = out[:, 9]  # BUG: the sequences have 8 steps: out[:, -1]
    loss = fc(last).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    # a Python branch on a value: the check cannot decide it and says so
    "value_branch": """
X = rng.standard_normal((128, 6)).astype("float32")
model = nn.Linear(6, 1)
opt = optim.SGD(model.parameters(), lr=0.01)
for i in range(0, 128, 32):
    pred = model(eager.from_numpy(X[i:i + 32]))
    loss = pred.pow(2).mean()
    if loss.item() > 10.0:  # BUG: the value of a tensor
        loss = loss * 0.1
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    # (N, 1) predictions against (N,) targets, written out by hand
    "outer_loss": """
X = rng.standard_normal((128, 6)).astype("float32")
t = rng.standard_normal(128).astype("float32")
model = nn.Linear(6, 1)
opt = optim.SGD(model.parameters(), lr=0.01)
for i in range(0, 128, 32):
    pred = model(eager.from_numpy(X[i:i + 32]))
    loss = ((pred - eager.from_numpy(t[i:i + 32])) ** 2).mean()  # BUG: (N, 1) - (N,)
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
}

# script -> (kind of the first finding, a piece of its message)
EXPECTED = {
    "loader_mlp": ("error", "has 64 features but weight (3, 46) expects 46"),
    "channels_last": ("error", "conv2d"),
    "hidden_batch": ("error", "(N, 16)"),
    "seq_index": ("error", "index 9 is out of range"),
    "value_branch": ("unexplored", "data-dependent"),
    "outer_loss": ("warning", "broadcast to (N, N)"),
}


def _write(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + textwrap.dedent(body))
    bug = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "# BUG" in line)
    return path, bug


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_new_users_bug_is_found_before_any_data_at_its_line(name, tmp_path):
    path, bug = _write(tmp_path, name, SCRIPTS[name])
    report = run_script(path)
    kind, words = EXPECTED[name]
    first = report.findings[0]
    assert (first.kind, first.file) == (kind, str(path)), str(report)
    # NOTE: a wrong layer size is reported at the call, naming the line that built the layer
    assert first.line == bug or f"created at {path}:{bug}" in first.message, str(report)
    assert words in first.message, str(report)
    assert report.seconds < 1.0, report.seconds


def test_the_fixed_script_checks_clean_in_well_under_a_second(tmp_path):
    path, _ = _write(tmp_path, "fixed", SCRIPTS["loader_mlp"].replace("Linear(46, 3)",
                                                                       "Linear(64, 3)"))
    report = run_script(path)
    assert report.findings == [] and report.steps == 1 and report.ok
    assert report.symbols["N"][0] == 16 and report.seconds < 0.5


def test_graph_script_reports_what_building_finds(tmp_path):
    path = tmp_path / "tf1.py"
    path.write_text(textwrap.dedent("""\
        import numpy as np
        from dualgrad import graph
        x = graph.placeholder(graph.float32, (None, 20))
        w = graph.Variable(graph.random_normal((30, 5)))
        logits = graph.matmul(x, w)  # BUG: w is (30, 5), x has 20 features
        with graph.Session() as sess:
            sess.run(graph.global_variables_initializer())
            sess.run(logits, {x: np.zeros((4, 20), "float32")})
        """))
    assert script_kind(path) == "graph"
    graph_report = run_script(path)
    (f,) = graph_report.findings
    assert (f.kind, f.line, graph_report.kind) == ("error", 5, "graph")
    assert "inner dimensions 20 != 30" in f.message


def test_cli_check_exits_non_zero_and_prints_the_line(tmp_path, capsys):
    path, bug = _write(tmp_path, "cli", SCRIPTS["loader_mlp"])
    assert cli.main(["check", str(path), "--some-flag-of-the-script"]) == 1
    out = capsys.readouterr()
    assert f"cli.py:{bug}" in out.out.replace("\n", "") and "error:" in out.out
    assert "1 shape error(s)" in out.err
