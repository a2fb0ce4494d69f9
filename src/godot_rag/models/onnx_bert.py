"""The BERT sentence encoder on ONNX Runtime: no torch at query time.

`import torch` alone took about 1.8 s of a cold first answer on a 2-core CPU. This module builds the
same encoder as `minilm.py` (embeddings -> encoder layers; masked mean and unit length in numpy) as an
ONNX graph straight from the model's safetensors with `onnx.helper`, so neither building nor running it
needs torch. The graph is built once and cached as a file keyed by the model file and the settings;
`int8` applies ONNX Runtime's dynamic quantization to the MatMul weights (what torch's
`quantize_dynamic` does to the Linear layers). The vectors are close to torch's, not equal: the
database's vectors and the queries' must come from the same engine (the embedder's key says which).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .bert_dir import BertDir, PooledBertEncoder

OPSET = 17  # LayerNormalization
GRAPH_VERSION = 1  # bump when the graph below changes: cached files of another version are not used
MASKED = -1e9  # added to the attention scores of padding (softmax gives it 0)


@dataclass
class Graph:
    """The ONNX graph being built: its nodes, its initializers (weights and constants), and the model's weights
    by their names in the safetensors file (less the `bert.` prefix)."""
    nodes: list[Any]
    inits: list[Any]
    weights: dict[str, np.ndarray]


def _linear(g: Graph, x: str, theirs: str, name: str) -> str:
    """x @ W.T + b, with W.T stored as its own initializer (what dynamic quantization reads)."""
    w, b = g.weights[f"{theirs}.weight"], g.weights[f"{theirs}.bias"]
    g.inits += [_tensor(f"{name}.w", np.ascontiguousarray(w.T)), _tensor(f"{name}.b", b)]
    from onnx import helper

    g.nodes += [helper.make_node("MatMul", [x, f"{name}.w"], [f"{name}.mm"]),
                helper.make_node("Add", [f"{name}.mm", f"{name}.b"], [name])]
    return name


def _tensor(name: str, array: np.ndarray) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array, dtype=array.dtype), name)


def _layer_norm(g: Graph, x: str, theirs: str, name: str, eps: float) -> str:
    from onnx import helper

    g.inits += [_tensor(f"{name}.g", g.weights[f"{theirs}.weight"]), _tensor(f"{name}.b", g.weights[f"{theirs}.bias"])]
    g.nodes.append(helper.make_node("LayerNormalization", [x, f"{name}.g", f"{name}.b"], [name], axis=-1, epsilon=eps))
    return name


def _attention(g: Graph, x: str, p: str, i: int) -> str:
    """Multi-head self-attention of layer i: softmax(q k^T / sqrt(d) + mask) v, heads joined, projected."""
    from onnx import helper

    q, k, v = (_linear(g, x, f"{p}.attention.self.{n}", f"l{i}.{n}") for n in ("query", "key", "value"))
    for t in (q, k, v):
        g.nodes.append(helper.make_node("Reshape", [t, "heads_shape"], [f"{t}.split"]))
    g.nodes += [helper.make_node("Transpose", [f"{q}.split"], [f"{q}.t"], perm=[0, 2, 1, 3]),
                helper.make_node("Transpose", [f"{k}.split"], [f"{k}.t"], perm=[0, 2, 3, 1]),
                helper.make_node("Transpose", [f"{v}.split"], [f"{v}.t"], perm=[0, 2, 1, 3]),
                helper.make_node("MatMul", [f"{q}.t", f"{k}.t"], [f"l{i}.scores"]),
                helper.make_node("Mul", [f"l{i}.scores", "scale"], [f"l{i}.scaled"]),
                helper.make_node("Add", [f"l{i}.scaled", "mask_bias"], [f"l{i}.masked"]),
                helper.make_node("Softmax", [f"l{i}.masked"], [f"l{i}.probs"], axis=-1),
                helper.make_node("MatMul", [f"l{i}.probs", f"{v}.t"], [f"l{i}.ctx"]),
                helper.make_node("Transpose", [f"l{i}.ctx"], [f"l{i}.ctx.t"], perm=[0, 2, 1, 3]),
                helper.make_node("Reshape", [f"l{i}.ctx.t", "joined_shape"], [f"l{i}.joined"])]
    return _linear(g, f"l{i}.joined", f"{p}.attention.output.dense", f"l{i}.attn_out")


def _gelu(nodes: list[Any], x: str, name: str) -> str:
    """BERT's exact gelu: x * 0.5 * (1 + erf(x / sqrt 2)) (ONNX Runtime fuses the pattern)."""
    from onnx import helper

    nodes += [helper.make_node("Div", [x, "sqrt2"], [f"{name}.div"]), helper.make_node("Erf", [f"{name}.div"], [f"{name}.erf"]),
              helper.make_node("Add", [f"{name}.erf", "one"], [f"{name}.plus"]),
              helper.make_node("Mul", [x, f"{name}.plus"], [f"{name}.mul"]),
              helper.make_node("Mul", [f"{name}.mul", "half"], [name])]
    return name


def _constants(w: dict[str, np.ndarray], hidden: int, heads: int) -> list[Any]:
    """The embedding tables and the constants the nodes name."""
    return [_tensor("word", w["embeddings.word_embeddings.weight"]),
            _tensor("position", w["embeddings.position_embeddings.weight"]),
            _tensor("token_type0", w["embeddings.token_type_embeddings.weight"][0]),
            _tensor("heads_shape", np.array([0, 0, heads, hidden // heads], dtype=np.int64)),
            _tensor("joined_shape", np.array([0, 0, hidden], dtype=np.int64)),
            _tensor("scale", np.array(1 / math.sqrt(hidden // heads), dtype=np.float32)),
            _tensor("masked", np.array(MASKED, dtype=np.float32)), _tensor("one", np.array(1.0, dtype=np.float32)),
            _tensor("half", np.array(0.5, dtype=np.float32)), _tensor("sqrt2", np.array(math.sqrt(2), dtype=np.float32)),
            _tensor("zero_i", np.array(0, dtype=np.int64)), _tensor("one_i", np.array(1, dtype=np.int64)),
            _tensor("axes_12", np.array([1, 2], dtype=np.int64))]


def _embedding_nodes() -> list[Any]:
    """Token and position embeddings summed (`e.sum`), and the attention mask as a bias (`mask_bias`)."""
    from onnx import TensorProto, helper

    return [helper.make_node("Gather", ["word", "input_ids"], ["e.word"]),
            helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
            helper.make_node("Gather", ["ids_shape", "one_i"], ["n_tokens"], axis=0),
            helper.make_node("Range", ["zero_i", "n_tokens", "one_i"], ["positions"]),
            helper.make_node("Gather", ["position", "positions"], ["e.pos"]),
            helper.make_node("Add", ["e.word", "token_type0"], ["e.wt"]),  # BERT's order of sums
            helper.make_node("Add", ["e.wt", "e.pos"], ["e.sum"]),
            helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["mask_f", "axes_12"], ["mask_4d"]),
            helper.make_node("Sub", ["one", "mask_4d"], ["mask_inv"]),
            helper.make_node("Mul", ["mask_inv", "masked"], ["mask_bias"])]


def _encoder_layer(g: Graph, x: str, i: int, eps: float) -> str:
    from onnx import helper

    p = f"encoder.layer.{i}"
    attn = _attention(g, x, p, i)
    g.nodes.append(helper.make_node("Add", [attn, x], [f"l{i}.res1"]))
    x = _layer_norm(g, f"l{i}.res1", f"{p}.attention.output.LayerNorm", f"l{i}.attn_norm", eps)
    inter = _gelu(g.nodes, _linear(g, x, f"{p}.intermediate.dense", f"l{i}.inter"), f"l{i}.gelu")
    out = _linear(g, inter, f"{p}.output.dense", f"l{i}.out")
    g.nodes.append(helper.make_node("Add", [out, x], [f"l{i}.res2"]))
    return _layer_norm(g, f"l{i}.res2", f"{p}.output.LayerNorm", f"l{i}.out_norm", eps)


def build_graph(bert: BertDir) -> Any:
    """The ONNX model: (input_ids, attention_mask) int64 [batch, tokens] -> last hidden state float32."""
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    cfg = bert.cfg
    weights = load_file(str(bert.root / "model.safetensors"))
    pre = "bert." if any(k.startswith("bert.") for k in weights) else ""
    w = {k[len(pre):]: v.astype(np.float32) for k, v in weights.items() if k.startswith(pre)}
    hidden, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    g = Graph(_embedding_nodes(), _constants(w, hidden, heads), w)
    x = _layer_norm(g, "e.sum", "embeddings.LayerNorm", "e.norm", eps)
    for i in range(cfg["num_hidden_layers"]):
        x = _encoder_layer(g, x, i, eps)
    g.nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        g.nodes, "bert", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
                          helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", hidden])], g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="godot-rag")


def graph_path(bert: BertDir, int8: bool, cache_dir: Path) -> Path:
    """The cached graph's file: keyed by the model file (path, size, mtime), the precision and the graph's version."""
    st = (bert.root / "model.safetensors").stat()
    key = json.dumps([str(bert.root.resolve()), st.st_size, st.st_mtime_ns, int8, GRAPH_VERSION, OPSET])
    return Path(cache_dir) / f"bert-{'int8' if int8 else 'fp32'}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def ensure_graph(bert: BertDir, int8: bool, cache_dir: Path) -> Path:
    """The cached graph, built (and quantized) first when missing; written atomically."""
    path = graph_path(bert, int8, cache_dir)
    if path.is_file():
        return path
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.onnx")
    onnx.save(build_graph(bert), str(tmp))
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantized = path.with_name(f"{path.stem}.{os.getpid()}.q.tmp.onnx")
        # It logs an advice to pre-process through the root logger, which would print under --quiet.
        logging.disable(logging.WARNING)
        try:
            quantize_dynamic(str(tmp), str(quantized), op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8)
        finally:
            logging.disable(logging.NOTSET)
        tmp.unlink()
        tmp = quantized
    tmp.replace(path)
    return path


class OnnxSentenceEncoder(PooledBertEncoder):
    """tokenize -> BERT (ONNX Runtime) -> masked mean -> unit length, with sentence-transformers' batching."""

    def __init__(self, session: Any, bert: BertDir) -> None:
        super().__init__(bert)
        self.session = session

    def _pooled(self, ids: list[list[int]], attention_mask: list[list[int]]) -> np.ndarray:
        attention = np.array(attention_mask, dtype=np.int64)
        hidden = self.session.run(["hidden"], {"input_ids": np.array(ids, dtype=np.int64), "attention_mask": attention})[0]
        m = attention[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def load_onnx_encoder(model_dir: str, int8: bool, cache_dir: Path, threads: int | None) -> OnnxSentenceEncoder | None:
    """The ONNX Runtime encoder for a Transformer(bert) + mean Pooling + Normalize directory, else None."""
    bert = BertDir.read(model_dir)
    if bert is None:
        return None
    import onnxruntime as ort

    path = ensure_graph(bert, int8, cache_dir)
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Idle threads sleep instead of spinning: on two cores a spinning thread takes the CPU the query's other
    # stages (and PostgreSQL) need.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return OnnxSentenceEncoder(session, bert)
