"""A BERT sentence encoder in plain torch, for the cold start.

`sentence_transformers` (through `transformers.BertModel`) takes about 3.5 s to import on a
2-core CPU; this module needs only torch, `tokenizers` and `safetensors`, so a cold
`retrieve --strategy D` answers in a few seconds. It reads a sentence-transformers directory
whose modules are exactly Transformer(bert) -> Pooling(mean) -> Normalize (all-MiniLM-L6-v2
is), and computes the same thing: same weights, same ops, same length-sorted batches (dynamic
int8 quantization scales each batch as a whole, so batching must match too).
`load_bert_encoder` returns None for any other directory; the caller then uses
sentence-transformers itself.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .bert_dir import BertDir, PooledBertEncoder


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, inter: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.attn_out, self.attn_norm = nn.Linear(hidden, hidden), nn.LayerNorm(hidden, eps=eps)
        self.inter, self.out, self.out_norm = nn.Linear(hidden, inter), nn.Linear(inter, hidden), nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, h = x.shape
        d = h // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, d).transpose(1, 2)

        ctx = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)),
                                             attn_mask=mask, scale=1 / math.sqrt(d))
        x = self.attn_norm(self.attn_out(ctx.transpose(1, 2).reshape(b, n, h)) + x)
        return self.out_norm(self.out(F.gelu(self.inter(x))) + x)


class BertEncoder(nn.Module):
    """BERT's embeddings and encoder layers (no pooler: mean pooling does not use it)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
        self.word = nn.Embedding(cfg["vocab_size"], h)
        self.position = nn.Embedding(cfg["max_position_embeddings"], h)
        self.token_type = nn.Embedding(cfg["type_vocab_size"], h)
        self.norm = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList(_Layer(h, cfg["num_attention_heads"], cfg["intermediate_size"], eps)
                                    for _ in range(cfg["num_hidden_layers"]))

    def forward(self, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.norm(self.word(ids) + self.token_type(torch.zeros_like(ids)) + self.position(positions))  # BERT's order of sums
        mask = attention.bool()[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        return x

    def load_bert_weights(self, weights: dict[str, torch.Tensor]) -> None:
        names = {"word.weight": "embeddings.word_embeddings.weight",
                 "position.weight": "embeddings.position_embeddings.weight",
                 "token_type.weight": "embeddings.token_type_embeddings.weight",
                 "norm.weight": "embeddings.LayerNorm.weight", "norm.bias": "embeddings.LayerNorm.bias"}
        parts = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                 "attn_out": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
                 "inter": "intermediate.dense", "out": "output.dense", "out_norm": "output.LayerNorm"}
        for i in range(len(self.layers)):
            for ours, theirs in parts.items():
                for p in ("weight", "bias"):
                    names[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
        prefix = "bert." if any(k.startswith("bert.") for k in weights) else ""
        self.load_state_dict({ours: weights[prefix + theirs] for ours, theirs in names.items()}, strict=True)


class SentenceEncoder(PooledBertEncoder):
    """tokenize -> BERT -> masked mean -> unit length, with sentence-transformers' batching."""

    def __init__(self, encoder: BertEncoder, bert: BertDir) -> None:
        super().__init__(bert)
        self.encoder = encoder

    @torch.inference_mode()
    def _pooled(self, ids: list[list[int]], attention_mask: list[list[int]]) -> np.ndarray:
        attention = torch.tensor(attention_mask)
        hidden = self.encoder(torch.tensor(ids), attention)
        m = attention.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1).numpy()


def load_bert_encoder(model_dir: str, int8: bool) -> SentenceEncoder | None:
    """The plain-torch encoder for a Transformer(bert) + mean Pooling + Normalize directory, else None."""
    bert = BertDir.read(model_dir)
    if bert is None:
        return None
    from safetensors.torch import load_file

    encoder = BertEncoder(bert.cfg)
    encoder.load_bert_weights(load_file(str(bert.root / "model.safetensors")))
    encoder.eval()
    if int8:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # In place: the float model is ours alone, and copying it first took 0.3-0.6 s of the cold start.
            encoder = torch.quantization.quantize_dynamic(encoder, {nn.Linear}, dtype=torch.qint8, inplace=True)
    return SentenceEncoder(encoder, bert)
