"""A twin's forward pass as an ONNX graph of the same weights, for onnxruntime-web to run in the visitor's browser.

The graph mirrors `NumpyTransformer.hidden` op for op, with its weights folded as it folds them (LayerNorm gains, the
attention scale and GELU's half inside the matmuls: the same elementwise products, so the same bits, with the small
folded biases taken from numpy), so there is one network and this is only its other notation. The shipped weights are
float16, so the graph stores them so and casts them up, as numpy does on loading.
One graph serves every pass the samplers make, through a key/value cache as the numpy adapters keep it:

inputs   ids (T,) int64, pos0 () int64, past_k / past_v (n_layer, n_head, S, head_dim) float32
outputs  logits (T, V): row i scores the token after ids[i] (Dream's shift, as `forward`);
         present_k / present_v (n_layer, n_head, K, head_dim): the past with rows pos0..pos0+T-1 replaced by these
         positions' keys and values (K = max(S, pos0 + T)); the queries attend to all K of them.

So the AR twin's prefill is (prompt, 0, empty past) and each decode (token, n, the last present); the diffusion twin's
block-start refresh is (whole sequence, 0, empty past) and each later step of the block (the block and its last
prefix token, start, the last present): Fast-dLLM's DualCache, as `MaskedDiffusionLM.logits(..., stop=)` computes it.
The AR graph masks keys right of each query (causal), the diffusion graph nothing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.model import NumpyTransformer


class _Builder:
    """Collects nodes and initializers under fresh names (onnx.helper underneath)."""

    def __init__(self) -> None:
        from onnx import helper

        self.helper = helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def const(self, value: Any, name: str | None = None) -> str:
        """An initializer holding `value` (float arrays as float32, ints as int64)."""
        from onnx import numpy_helper

        arr = np.asarray(value)
        arr = arr.astype(np.float32) if arr.dtype.kind == "f" else arr.astype(np.int64)
        name = name or self.fresh("c")
        self.inits.append(numpy_helper.from_array(arr.copy(order="C"), name))
        return name

    def weight(self, value: np.ndarray, name: str | None = None) -> str:
        """A float32 weight, stored as float16 and cast back when that loses nothing (the shipped twins keep float16
        weights, so the file is half the size and the values the same bits)."""
        half = value.astype(np.float16)
        if not np.array_equal(half.astype(np.float32), value):
            return self.const(value, name)
        from onnx import TensorProto, numpy_helper

        stored = self.fresh("half")
        self.inits.append(numpy_helper.from_array(half, stored))
        return self.op("Cast", stored, out=name, to=TensorProto.FLOAT)

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def op(self, kind: str, *inputs: str, out: str | None = None, **attrs: Any) -> str:
        """One node; returns its (single) output's name."""
        name = out or self.fresh(kind.lower())
        self.nodes.append(self.helper.make_node(kind, list(inputs), [name], **attrs))
        return name


def _normalize(b: _Builder, x: str, c: dict[str, str]) -> str:
    """`model._normalize`: x minus its mean, over the root of its mean square plus eps."""
    xc = b.op("Sub", x, b.op("ReduceMean", x, c["last"], keepdims=1))
    var = b.op("Div", b.op("ReduceSum", b.op("Mul", xc, xc), c["last"], keepdims=1), c["width"])
    return b.op("Mul", xc, b.op("Reciprocal", b.op("Sqrt", b.op("Add", var, c["eps"]))))


def _keys(b: _Builder, past: str, layer: int, new: str, c: dict[str, str]) -> str:
    """This layer's keys (or values) for attention: the past's rows before pos0, these positions', the past's after."""
    mine = b.op("Gather", past, b.const(np.array(layer)), axis=0)
    left = b.op("Slice", mine, c["zero"], c["pos0"], c["one"])
    right = b.op("Slice", mine, c["end"], c["big"], c["one"])
    return b.op("Concat", left, new, right, axis=1)


def _attention(b: _Builder, h: str, L: dict[str, np.ndarray], layer: int, c: dict[str, str],
               shape: tuple[int, int, int], causal: bool) -> tuple[str, str, str]:
    """One layer's attention output (T, C) and its full keys and values (H, K, D)."""
    H, D, C = shape
    qkv_wf = b.op("Mul", b.op("Mul", b.const(L["ln1_w"][:, None]), b.weight(L["qkv_w"])), c["scale"])
    qkv = b.op("Add", b.op("MatMul", h, qkv_wf), b.const(L["qkv_bf"]))
    qkv = b.op("Transpose", b.op("Reshape", qkv, b.const(np.array([-1, 3, H, D]))), perm=[1, 2, 0, 3])
    q, k, v = (b.op("Gather", qkv, b.const(np.array(i)), axis=0) for i in range(3))
    keys, values = _keys(b, "past_k", layer, k, c), _keys(b, "past_v", layer, v, c)
    att = b.op("MatMul", q, b.op("Transpose", keys, perm=[0, 2, 1]))
    if causal:
        att = b.op("Add", att, c["mask"])
    att = b.op("Softmax", att, axis=-1)
    y = b.op("Reshape", b.op("Transpose", b.op("MatMul", att, values), perm=[1, 0, 2]), b.const(np.array([-1, C])))
    return b.op("Add", b.op("MatMul", y, b.weight(L["proj_w"])), b.const(L["proj_b"])), keys, values


def _gelu_unhalved(b: _Builder, m: str) -> str:
    """`model._gelu(half=False)`: x (1 + tanh(c (x + 0.044715 x^3))), its 0.5 folded into the next matmul."""
    cst = math.sqrt(2.0 / math.pi)
    inner = b.op("Add", b.op("Mul", b.op("Mul", m, m), b.const(np.float32(0.044715 * cst))), b.const(np.float32(cst)))
    inner = b.op("Tanh", b.op("Mul", inner, m))
    return b.op("Mul", m, b.op("Add", inner, b.const(np.float32(1.0))))


def _common(b: _Builder, net: NumpyTransformer) -> dict[str, str]:
    """Constants and shapes every layer shares: pos0 as a 1-d index, the chunk's end, the causal mask."""
    c = {"last": b.const(np.array([-1])), "width": b.const(np.float32(net.config.n_embd)),
         "eps": b.const(np.float32(1e-5)), "zero": b.const(np.array([0])), "one": b.const(np.array([1])),
         "big": b.const(np.array([1 << 30]))}
    scale = np.ones(3 * net.config.n_embd, np.float32)  # attention's 1/sqrt(d) on the query columns, as numpy folds it
    scale[: net.config.n_embd] = 1.0 / math.sqrt(net.config.n_embd // net.config.n_head)
    c["scale"] = b.const(scale)
    c["pos0"] = b.op("Reshape", "pos0", c["one"])
    c["T"] = b.op("Reshape", b.op("Gather", b.op("Shape", "ids"), b.const(np.array(0))), c["one"])
    c["end"] = b.op("Add", c["pos0"], c["T"])
    if net.config.causal:  # key j is hidden from query i when j > pos0 + i
        S = b.op("Gather", b.op("Shape", "past_k"), b.const(np.array(2)))
        K = b.op("Max", b.op("Reshape", S, c["one"]), c["end"])
        rows = b.op("Unsqueeze", b.op("Add", b.op("Range", b.const(np.array(0)), b.op("Squeeze", c["T"]),
                                                  b.const(np.array(1))), c["pos0"]), b.const(np.array([1])))
        cols = b.op("Unsqueeze", b.op("Range", b.const(np.array(0)), b.op("Squeeze", K), b.const(np.array(1))),
                    b.const(np.array([0])))
        c["mask"] = b.op("Where", b.op("Greater", cols, rows), b.const(np.float32(-np.inf)), b.const(np.float32(0)))
    return c


def build(net: NumpyTransformer, name: str) -> Any:
    """The ONNX model (onnx.ModelProto, opset 18) of `net`'s forward pass with its key/value cache."""
    from onnx import TensorProto, helper

    cfg = net.config
    H, C = cfg.n_head, cfg.n_embd
    D = C // H
    b = _Builder()
    c = _common(b, net)
    wte = b.weight(net.wte, "wte")
    x = b.op("Add", b.op("Gather", wte, "ids", axis=0),
             b.op("Slice", b.weight(net.wpe), c["pos0"], c["end"], c["zero"]))
    keys, values = [], []
    for i, L in enumerate(net.layers):
        att, k, v = _attention(b, _normalize(b, x, c), L, i, c, (H, D, C), cfg.causal)
        keys.append(b.op("Unsqueeze", k, c["zero"]))
        values.append(b.op("Unsqueeze", v, c["zero"]))
        x = b.op("Add", x, att)
        fc_wf = b.op("Mul", b.const(L["ln2_w"][:, None]), b.weight(L["fc_w"]))
        m = b.op("Add", b.op("MatMul", _normalize(b, x, c), fc_wf), b.const(L["fc_bf"]))
        fc_proj_wh = b.op("Mul", b.const(np.float32(0.5)), b.weight(L["fc_proj_w"]))
        mlp = b.op("MatMul", _gelu_unhalved(b, m), fc_proj_wh)
        x = b.op("Add", x, b.op("Add", mlp, b.const(L["fc_proj_b"])))
    h = b.op("Add", b.op("Mul", _normalize(b, x, c), b.const(net.ln_f_w)), b.const(net.ln_f_b))
    b.op("Gemm", h, wte, out="logits", transB=1)
    b.op("Concat", *keys, out="present_k", axis=0)
    b.op("Concat", *values, out="present_v", axis=0)
    cache: list[str | int] = [cfg.n_layer, H, "S", D]
    graph = helper.make_graph(
        b.nodes, name,
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["T"]),
         helper.make_tensor_value_info("pos0", TensorProto.INT64, []),
         helper.make_tensor_value_info("past_k", TensorProto.FLOAT, cache),
         helper.make_tensor_value_info("past_v", TensorProto.FLOAT, cache)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["T", cfg.vocab_size]),
         helper.make_tensor_value_info("present_k", TensorProto.FLOAT, [cfg.n_layer, H, "K", D]),
         helper.make_tensor_value_info("present_v", TensorProto.FLOAT, [cfg.n_layer, H, "K", D])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="converge")
    model.ir_version = 8  # onnxruntime-web and onnxruntime both read IR 8
    return model


def write(net: NumpyTransformer, path: str | Path, name: str) -> Path:
    """Writes `net`'s graph to `path` (checked by onnx.checker first); returns the path."""
    import onnx

    model = build(net, name)
    onnx.checker.check_model(model)
    Path(path).write_bytes(model.SerializeToString())
    return Path(path)
