"""CAM++ (3D-Speaker's ``speakerlab/models/campplus``) as an ONNX graph, built from its weights.

The graph follows ``DTDNN.CAMPPlus`` (feat_dim 80, growth 32, bn_size 4,
init_channels 128, blocks of 12/24/16 layers, config ``batchnorm-relu``)
layer by layer with ``onnx.helper``; a batch norm that follows a
convolution is folded into it, one that precedes one becomes a per-channel
scale and shift. Input ``features`` (batch, frames, 80): mean-normalised
Kaldi fbank; output ``embedding`` (batch, embedding size), not normalised.

One simplification, exact for what it is given: a CAM layer's context is
the mean over all frames plus the mean over its 100-frame segment; for at
most ``MAX_FRAMES`` input frames (100 after the first TDNN's stride of 2)
there is one segment, the whole, so the context is twice the mean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import onnx

#: The longest input, in frames, for which the graph equals the original model.
MAX_FRAMES = 200
#: The feature dimension the model was trained on (80 mel bins).
FEATURES = 80
_EPS = 1e-5
_BLOCKS = ((12, 1), (24, 2), (16, 2))
_OPSET = 17


class _Builder:
    """Nodes and initializers of one graph, named as they are added."""

    def __init__(self, weights: dict[str, npt.NDArray[Any]]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, hint: str, value: npt.NDArray[Any]) -> str:
        import numpy as np  # noqa: PLC0415
        from onnx import numpy_helper  # noqa: PLC0415

        name = self.name(hint)
        array = np.ascontiguousarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, kind: str, inputs: list[str], **attributes: Any) -> str:
        from onnx import helper  # noqa: PLC0415

        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attributes))
        return out

    def bn(self, prefix: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """A batch norm's scale and shift per channel (affine or not)."""
        import numpy as np  # noqa: PLC0415

        mean = self.weights[f"{prefix}.running_mean"].astype(np.float64)
        var = self.weights[f"{prefix}.running_var"].astype(np.float64)
        gamma = self.weights.get(f"{prefix}.weight")
        beta = self.weights.get(f"{prefix}.bias")
        scale = (1.0 if gamma is None else gamma.astype(np.float64)) / np.sqrt(var + _EPS)
        shift = (0.0 if beta is None else beta.astype(np.float64)) - mean * scale
        return np.broadcast_to(scale, mean.shape), np.broadcast_to(shift, mean.shape)

    def conv(
        self,
        x: str,
        weight: str,
        *,
        bn: str | None = None,
        bias: str | None = None,
        stride: tuple[int, ...] | None = None,
        pad: tuple[int, ...] | None = None,
        dilation: int = 1,
    ) -> str:
        """A convolution (1-D or 2-D by its weight), with the batch norm after it folded in."""
        import numpy as np  # noqa: PLC0415

        w = self.weights[weight].astype(np.float64)
        b = np.zeros(w.shape[0]) if bias is None else self.weights[bias].astype(np.float64)
        if bn is not None:
            scale, shift = self.bn(bn)
            w = w * scale.reshape((-1,) + (1,) * (w.ndim - 1))
            b = b * scale + shift
        spatial = w.ndim - 2
        attributes: dict[str, Any] = {
            "kernel_shape": list(w.shape[2:]),
            "strides": list(stride or (1,) * spatial),
            "pads": list(pad or (0,) * spatial) * 2,
            "dilations": [dilation] * spatial,
        }
        return self.op("Conv", [x, self.const("w", w), self.const("b", b)], **attributes)

    def affine(self, x: str, prefix: str) -> str:
        """A batch norm on (batch, channels, frames) as a scale and a shift."""
        scale, shift = self.bn(prefix)
        scaled = self.op("Mul", [x, self.const("scale", scale.reshape(1, -1, 1))])
        return self.op("Add", [scaled, self.const("shift", shift.reshape(1, -1, 1))])

    def relu(self, x: str) -> str:
        return self.op("Relu", [x])


def _res_block(g: _Builder, x: str, prefix: str, stride: int) -> str:
    """``BasicResBlock``: two 3-by-3 convolutions and the shortcut, striding the frequency axis."""
    out = g.relu(
        g.conv(x, f"{prefix}.conv1.weight", bn=f"{prefix}.bn1", stride=(stride, 1), pad=(1, 1))
    )
    out = g.conv(out, f"{prefix}.conv2.weight", bn=f"{prefix}.bn2", pad=(1, 1))
    if f"{prefix}.shortcut.0.weight" in g.weights:
        x = g.conv(x, f"{prefix}.shortcut.0.weight", bn=f"{prefix}.shortcut.1", stride=(stride, 1))
    return g.relu(g.op("Add", [out, x]))


def _dense_layer(g: _Builder, x: str, prefix: str, dilation: int) -> str:
    """``CAMDenseTDNNLayer``: bottleneck, then a context-aware masked 3-tap convolution."""
    h = g.relu(g.affine(x, f"{prefix}.nonlinear1.batchnorm"))
    h = g.relu(g.conv(h, f"{prefix}.linear1.weight", bn=f"{prefix}.nonlinear2.batchnorm"))
    cam = f"{prefix}.cam_layer"
    local = g.conv(h, f"{cam}.linear_local.weight", pad=(dilation,), dilation=dilation)
    mean = g.op("ReduceMean", [h], axes=[2], keepdims=1)
    context = g.op("Add", [mean, mean])  # the whole's mean + the one segment's mean
    context = g.relu(g.conv(context, f"{cam}.linear1.weight", bias=f"{cam}.linear1.bias"))
    mask = g.op("Sigmoid", [g.conv(context, f"{cam}.linear2.weight", bias=f"{cam}.linear2.bias")])
    return g.op("Mul", [local, mask])


def build(weights: dict[str, npt.NDArray[Any]]) -> onnx.ModelProto:
    """The CAM++ model whose state dict is ``weights``, as a checked ONNX model."""
    import numpy as np  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    g = _Builder(weights)
    x = g.op("Transpose", ["features"], perm=[0, 2, 1])
    x = g.op("Unsqueeze", [x, g.const("axis", np.array([1], dtype=np.int64))])
    x = g.relu(g.conv(x, "head.conv1.weight", bn="head.bn1", pad=(1, 1)))
    for layer in ("layer1", "layer2"):
        x = _res_block(g, x, f"head.{layer}.0", 2)
        x = _res_block(g, x, f"head.{layer}.1", 1)
    x = g.relu(g.conv(x, "head.conv2.weight", bn="head.bn2", stride=(2, 1), pad=(1, 1)))
    channels = weights["head.conv2.weight"].shape[0] * (FEATURES // 8)
    x = g.op("Reshape", [x, g.const("shape", np.array([0, channels, -1], dtype=np.int64))])
    x = g.relu(
        g.conv(
            x,
            "xvector.tdnn.linear.weight",
            bn="xvector.tdnn.nonlinear.batchnorm",
            stride=(2,),
            pad=(2,),
        )
    )
    for number, (layers, dilation) in enumerate(_BLOCKS, start=1):
        for index in range(1, layers + 1):
            grown = _dense_layer(g, x, f"xvector.block{number}.tdnnd{index}", dilation)
            x = g.op("Concat", [x, grown], axis=1)
        transit = f"xvector.transit{number}"
        x = g.relu(g.affine(x, f"{transit}.nonlinear.batchnorm"))
        x = g.conv(x, f"{transit}.linear.weight")
    x = g.relu(g.affine(x, "xvector.out_nonlinear.batchnorm"))
    mean = g.op("ReduceMean", [x], axes=[2], keepdims=1)
    centred = g.op("Sub", [x, mean])
    squares = g.op(
        "ReduceSum",
        [g.op("Mul", [centred, centred]), g.const("axis", np.array([2], dtype=np.int64))],
        keepdims=0,
    )
    frames = g.op("Cast", [g.op("Shape", [x], start=2, end=3)], to=TensorProto.FLOAT)
    std = g.op(
        "Sqrt",
        [
            g.op(
                "Div",
                [squares, g.op("Sub", [frames, g.const("one", np.array([1.0], dtype=np.float32))])],
            )
        ],
    )
    stats = g.op(
        "Concat",
        [g.op("Squeeze", [mean, g.const("axis", np.array([2], dtype=np.int64))]), std],
        axis=1,
    )
    dense = weights["xvector.dense.linear.weight"].astype(np.float64)[:, :, 0]
    scale, shift = g.bn("xvector.dense.nonlinear.batchnorm")
    gemm = g.op(
        "Gemm",
        [stats, g.const("w", (dense * scale[:, None]).T), g.const("b", shift)],
    )
    g.nodes.append(helper.make_node("Identity", [gemm], ["embedding"]))
    graph = helper.make_graph(
        g.nodes,
        "campplus",
        [
            helper.make_tensor_value_info(
                "features", TensorProto.FLOAT, ["batch", "frames", FEATURES]
            )
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", dense.shape[0]])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
