"""Transformer programs as the PyTorch tutorials write them: a word-level language model
(TransformerEncoder, sinusoidal positions in a buffer, nn.Transformer's causal mask, a
key padding mask, a MultiheadAttention pooling query) and a seq2seq nn.Transformer with
padding masks on both sides, run on dualgrad.eager and on torch from the same weights."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dualgrad.eager
from tests.eager._compare import assert_same_results, load, state

real_torch = pytest.importorskip("torch")


def language_model(torch, ntoken=15, d_model=16):
    nn = torch.nn

    class PositionalEncoding(nn.Module):
        def __init__(self, max_len=50):
            super().__init__()
            position = torch.arange(max_len).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
            pe = torch.zeros(max_len, 1, d_model)
            pe[:, 0, 0::2] = torch.sin(position * div_term)
            pe[:, 0, 1::2] = torch.cos(position * div_term)
            self.register_buffer("pe", pe)

        def forward(self, x):
            return x + self.pe[:x.size(0)]

    class TransformerModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos_encoder = PositionalEncoding()
            layer = nn.TransformerEncoderLayer(d_model, 4, 32, dropout=0.0)
            self.transformer_encoder = nn.TransformerEncoder(layer, 2,
                                                             enable_nested_tensor=False)
            self.embedding = nn.Embedding(ntoken, d_model)
            self.linear = nn.Linear(d_model, ntoken)
            self.pool = nn.MultiheadAttention(ntoken, 3, batch_first=True)
            self.query = nn.Parameter(torch.randn(1, 1, ntoken))

        def forward(self, src, pad_mask):
            src = self.embedding(src) * math.sqrt(d_model)
            src = self.pos_encoder(src)
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
            output = self.linear(self.transformer_encoder(src, src_mask, src_key_padding_mask=pad_mask))
            seq = output.transpose(0, 1)
            pooled, weights = self.pool(self.query.expand(seq.size(0), -1, -1), seq, seq,
                                        key_padding_mask=pad_mask)
            return output, pooled.squeeze(1), weights
    return TransformerModel()


def lm_program(torch, weights, src, pad):
    model = language_model(torch)
    load(torch, model, weights)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    src, pad = torch.tensor(src), torch.tensor(pad)
    losses = []
    for _ in range(3):
        out, pooled, attn = model(src, pad)
        loss = torch.nn.functional.cross_entropy(out.view(-1, 15), src.roll(-1, 0).reshape(-1))
        loss = loss + pooled.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "attn": attn, **state(model)}


def seq2seq(torch):
    nn = torch.nn

    class Seq2Seq(nn.Module):
        def __init__(self, vocab=12, d_model=16):
            super().__init__()
            self.src_emb, self.tgt_emb = nn.Embedding(vocab, d_model), nn.Embedding(vocab, d_model)
            self.transformer = nn.Transformer(d_model, nhead=2, num_encoder_layers=2,
                                              num_decoder_layers=2, dim_feedforward=32,
                                              dropout=0.0, batch_first=True)
            self.generator = nn.Linear(d_model, vocab)

        def forward(self, src, tgt, src_pad, tgt_pad):
            tgt_mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
            out = self.transformer(self.src_emb(src), self.tgt_emb(tgt), tgt_mask=tgt_mask,
                                   src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                                   memory_key_padding_mask=src_pad)
            return self.generator(out)
    return Seq2Seq()


def seq2seq_program(torch, weights, src, tgt, src_pad, tgt_pad):
    model = seq2seq(torch)
    load(torch, model, weights)
    # NOTE: not Adam: the keys' in-projection bias has a zero gradient (softmax ignores a
    # shift), whose rounding noise Adam's normalisation would blow up differently per library
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=0)
    src, tgt = torch.tensor(src), torch.tensor(tgt)
    src_pad, tgt_pad = torch.tensor(src_pad), torch.tensor(tgt_pad)
    losses = []
    for _ in range(3):
        logits = model(src, tgt[:, :-1], src_pad, tgt_pad[:, :-1])
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, **state(model)}


def test_word_language_model_equals_torch():
    rng = np.random.default_rng(0)
    src = rng.integers(0, 15, (7, 3))
    pad = np.zeros((3, 7), bool)
    pad[1, 5:], pad[2, 3:] = True, True
    real_torch.manual_seed(0)
    weights = state(language_model(real_torch))
    ours = lm_program(dualgrad.eager, weights, src, pad)
    ref = lm_program(real_torch, weights, src, pad)
    assert_same_results(ours, ref, rtol=1e-4, atol=1e-5)


def test_seq2seq_transformer_equals_torch():
    rng = np.random.default_rng(1)
    src, tgt = rng.integers(1, 12, (2, 6)), rng.integers(1, 12, (2, 5))
    src[1, 4:], tgt[1, 3:] = 0, 0
    real_torch.manual_seed(0)
    weights = state(seq2seq(real_torch))
    ours = seq2seq_program(dualgrad.eager, weights, src, tgt, src == 0, tgt == 0)
    ref = seq2seq_program(real_torch, weights, src, tgt, src == 0, tgt == 0)
    assert_same_results(ours, ref, rtol=1e-4, atol=2e-5)


def test_transformer_names_and_initialisation_are_torchs():
    ours = dualgrad.eager.nn.Transformer(16, 2, 1, 1, 32)
    ref = real_torch.nn.Transformer(16, 2, 1, 1, 32)
    assert list(ours.state_dict()) == list(ref.state_dict())
    w = ours.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= math.sqrt(6 / (16 + 32)) and w.std() > 0.1
    mask = dualgrad.eager.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(
        mask.numpy(), real_torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
