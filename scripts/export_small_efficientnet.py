"""A small EfficientNet (torchvision's B0 layout at width 0.25, depth 0.34: SiLU, squeeze-and-
excitation, depthwise convolutions) exported by PyTorch's classic exporter with a dynamic batch,
its batch norms calibrated on random data, with an input and onnxruntime's logits: a CNN family
not in examples/onnx/corpus, for checking the fuse step on exporter output (docs/benchmarks.md).
Needs torch, torchvision, onnx, onnxruntime (scripts/onnx_corpus_requirements.txt's venv), never
weft or CI: python scripts/export_small_efficientnet.py OUT_DIR."""
import pathlib
import sys

import numpy as np
import onnxruntime as ort
import torch
from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(7)
    setting, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    model = EfficientNet(setting, 0.2, last_channel=last, num_classes=10)
    model.train()
    with torch.no_grad():  # batch-norm statistics that are not the identity
        for _ in range(4):
            model(torch.randn(4, 3, 64, 64))
    model.eval()
    x = torch.randn(1, 3, 64, 64)
    path = out / "effnet.onnx"
    torch.onnx.export(model, (x,), str(path), input_names=["pixel_values"], output_names=["logits"],
                      dynamic_axes={"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, dynamo=False)
    logits = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"pixel_values": x.numpy()})[0]
    np.savez(out / "in.npz", pixel_values=x.numpy())
    np.savez(out / "ref.npz", logits=logits)
    print(f"wrote {path}, in.npz, ref.npz")


if __name__ == "__main__":
    main()
