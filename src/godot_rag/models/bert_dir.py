"""A sentence-transformers directory that the plain BERT encoders (`minilm.py` on torch, `onnx_bert.py` on
ONNX Runtime) compute exactly: Transformer(bert) -> Pooling(mean) -> Normalize (all-MiniLM-L6-v2 is).
Reading it needs neither torch nor sentence-transformers."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

EXPECTED_MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                    "sentence_transformers.models.Normalize"]


@dataclass(frozen=True)
class BertDir:
    root: Path
    cfg: dict  # config.json
    max_seq_length: int

    @classmethod
    def read(cls, model_dir: str) -> BertDir | None:
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

    def tokenizers(self) -> tuple[Any, Any]:
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


class PooledBertEncoder:
    """What both BERT engines share: the directory's two tokenizers and sentence-transformers' batching. A
    subclass gives only `_pooled`, one padded batch's unit mean-pooled vectors."""

    def __init__(self, bert: BertDir) -> None:
        self.tokenizer, self.pieces = bert.tokenizers()
        self.max_seq_length, self.dim = bert.max_seq_length, bert.cfg["hidden_size"]

    def get_sentence_embedding_dimension(self) -> int:
        return self.dim

    def piece_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of the text's word pieces, without [CLS]/[SEP] and without truncation."""
        return list(self.pieces.encode(text, add_special_tokens=False).offsets)

    def encode_whole(self, text: str) -> np.ndarray | None:
        """The text's unit vector when it fits one window, else None: `encode([text])` with the text tokenized
        once (a query is most often one window, and cutting it into windows tokenizes it a second time)."""
        enc = self.tokenizer.encode(text)
        if enc.overflowing:
            return None
        return self._pooled([enc.ids], [enc.attention_mask])[0]

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Longest first (sentence-transformers' unstable sort; dynamic int8 quantization scales each batch as a
        whole, so batching must match), each batch tokenized and padded."""
        order = np.argsort([-len(t) for t in texts])
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start:start + batch_size]
            enc = self.tokenizer.encode_batch([texts[i] for i in idx])
            out[idx] = self._pooled([e.ids for e in enc], [e.attention_mask for e in enc])
        return out

    def _pooled(self, ids: list[list[int]], attention_mask: list[list[int]]) -> np.ndarray:
        raise NotImplementedError
