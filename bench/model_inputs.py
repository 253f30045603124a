#!/usr/bin/env python3
"""Seeded token-id inputs (.npz) for the committed ONNX transformers, with the standard library
only (the GPU machine may have no NumPy): `model_inputs.py bert|llama BATCH SEQ OUT.npz`."""
import io
import random
import struct
import sys
import zipfile

VOCAB = 256  # scripts/export_transformers.py: both configurations


def npy_int64(values, shape):
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%s), }" % "".join(
        f"{d}, " for d in shape)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"  # 64-byte aligned, as NumPy writes
    out = io.BytesIO()
    out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
    out.write(struct.pack(f"<{len(values)}q", *values))
    return out.getvalue()


def main():
    model, batch, seq, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(7)
    arrays = {"input_ids": [rng.randrange(VOCAB) for _ in range(batch * seq)]}
    if model == "bert":
        arrays["attention_mask"] = [1] * (batch * seq)
    with zipfile.ZipFile(path, "w") as z:
        for name, values in arrays.items():
            z.writestr(name + ".npy", npy_int64(values, (batch, seq)))


if __name__ == "__main__":
    main()
