"""A text classifier as tutorials write it (Embedding with padding_idx, a bidirectional
two-layer LSTM or GRU over pack_padded_sequence with unsorted lengths, the last hidden
states of both directions into a Linear, Adam), run on dualgrad.eager and on torch from the
same weights: losses, padded outputs, lengths and trained weights agree."""
from __future__ import annotations

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import as_numpy, assert_same_results, load, state

real_torch = pytest.importorskip("torch")


def text_classifier(torch, kind):
    nn = torch.nn

    class TextClassifier(nn.Module):
        def __init__(self, vocab=20, emb=8, hid=6, ncls=3):
            super().__init__()
            self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
            rnn = nn.LSTM if kind == "lstm" else nn.GRU
            self.rnn = rnn(emb, hid, num_layers=2, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(2 * hid, ncls)

        def forward(self, text, lengths):
            embedded = self.embedding(text)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths.cpu(),
                                                       batch_first=True, enforce_sorted=False)
            packed_out, hidden = self.rnn(packed)
            if kind == "lstm":
                hidden = hidden[0]
            out, out_lens = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True)
            hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
            return self.fc(hidden), out, out_lens
    return TextClassifier()


def classifier_program(torch, weights, kind, seqs, labels):
    model = text_classifier(torch, kind)
    load(torch, model, weights)
    lengths = torch.tensor([len(s) for s in seqs])
    text = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first=True)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = torch.nn.CrossEntropyLoss()
    losses = []
    for _ in range(3):
        opt.zero_grad()
        logits, out, out_lens = model(text, lengths)
        loss = criterion(logits, torch.tensor(labels))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "out": out, "out_lens": out_lens, **state(model)}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_packed_text_classifier_equals_torch(kind):
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 20, n) for n in [5, 3, 7, 2]]
    labels = [0, 1, 2, 1]
    real_torch.manual_seed(0)
    weights = state(text_classifier(real_torch, kind))
    ours = classifier_program(dualgrad.eager, weights, kind, seqs, labels)
    ref = classifier_program(real_torch, weights, kind, seqs, labels)
    assert_same_results(ours, ref, rtol=1e-4, atol=2e-5)


def _packing(torch, x, lengths, h0):
    rnn = torch.nn.utils.rnn
    packed = rnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=False)
    seq = rnn.pack_sequence([torch.tensor(x[:n, b]) for b, n in enumerate(lengths)],
                            enforce_sorted=False)
    gru = torch.nn.GRU(2, 3)
    with torch.no_grad():
        for p in gru.parameters():
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
    out, h = gru(packed, torch.tensor(h0))
    return {"data": packed.data, "batch_sizes": packed.batch_sizes,
            "sorted": packed.sorted_indices, "unsorted": packed.unsorted_indices,
            "seq_data": seq.data, "out": out.data, "h": h,
            "unpacked": rnn.pad_packed_sequence(out, padding_value=-1.0, total_length=5)[0],
            "unpack": [as_numpy(t) for t in rnn.unpack_sequence(seq)][1]}


def test_packed_layout_and_initial_state_order_equal_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    h0 = rng.standard_normal((1, 3, 3)).astype(np.float32)
    lengths = [2, 4, 3]
    assert_same_results(_packing(dualgrad.eager, x, lengths, h0),
                        _packing(real_torch, x, lengths, h0))


def test_unsorted_lengths_need_enforce_sorted_false():
    rnn = dualgrad.eager.nn.utils.rnn
    with pytest.raises(RuntimeError, match="enforce_sorted=False"):
        rnn.pack_padded_sequence(dualgrad.eager.zeros(3, 2, 1), [1, 3])
