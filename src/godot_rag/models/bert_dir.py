"""A sentence-transformers directory that the plain BERT encoders (`minilm.py` on torch, `onnx_bert.py` on
ONNX Runtime) compute exactly: Transformer(bert) -> Pooling(mean) -> Normalize (all-MiniLM-L6-v2 is).
Reading it needs neither torch nor sentence-transformers."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

EXPECTED_MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                    "sentence_transformers.models.Normalize"]


@dataclass(frozen=True)
class BertDir:
    root: Path
    cfg: dict  # config.json
    max_seq_length: int

    @classmethod
    def read(cls, model_dir: str) -> "BertDir | None":
        """The directory's settings, or None when it is not exactly BERT + mean pooling + normalize."""
        root = Path(model_dir)
        try:
            modules = [m["type"] for m in json.loads((root / "modules.json").read_text())]
            cfg = json.loads((root / "config.json").read_text())
            pooling = json.loads((root / "1_Pooling" / "config.json").read_text())
            st_cfg = json.loads((root / "sentence_bert_config.json").read_text())
        except (OSError, ValueError, KeyError, TypeError):
            return None
        mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
            v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens")
        if (modules != EXPECTED_MODULES or cfg.get("model_type") != "bert" or not mean_only
                or cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute"
                or not (root / "model.safetensors").is_file() or not (root / "tokenizer.json").is_file()):
            return None
        return cls(root, cfg, int(st_cfg.get("max_seq_length", 256)))

    def tokenizers(self):
        """(batch tokenizer: truncates and pads, whole-text tokenizer: cuts texts into word pieces). Two, so
        that no call changes shared settings (serve encodes from several threads)."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.root / "tokenizer.json"))
        pieces = Tokenizer.from_file(str(self.root / "tokenizer.json"))
        pieces.no_truncation()
        pieces.no_padding()
        tokenizer.enable_truncation(self.max_seq_length)
        tokenizer.enable_padding(pad_id=self.cfg.get("pad_token_id", 0), pad_token="[PAD]")
        return tokenizer, pieces


def encode_sorted(texts: list[str], batch_size: int, tokenizer, dim: int,
                  pooled_of: Callable[[list, list], np.ndarray]) -> np.ndarray:
    """Unit vectors of `texts` in sentence-transformers' batches: longest first (the same unstable sort; dynamic
    int8 quantization scales each batch as a whole, so batching must match), each batch tokenized, padded and
    given to `pooled_of(ids, attention_mask)`, which returns its unit mean-pooled vectors."""
    order = np.argsort([-len(t) for t in texts])
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        idx = order[start:start + batch_size]
        enc = tokenizer.encode_batch([texts[i] for i in idx])
        out[idx] = pooled_of([e.ids for e in enc], [e.attention_mask for e in enc])
    return out
