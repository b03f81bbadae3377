"""A .safetensors reader in numpy alone, used only where the `safetensors` package is missing (in the browser).

The format: 8 bytes (little-endian u64) giving the length of a JSON header, the header (name -> dtype,
shape, [start, end) byte offsets into the data that follows; plus an optional "__metadata__"), then the data.
load_file and safe_open mirror safetensors.numpy.load_file and safetensors.safe_open(..., framework="np")
as the helpers use them; tests/test_lite_fallbacks.py compares them with the real package.

In the browser only: used from 01_embeddings on, through helpers.pretrained; the whole encoder is taught in
09_attention_in_a_real_model.
"""

import json
import struct
from pathlib import Path

import numpy as np

DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
    "BOOL": "?",
}


def read_header(path):
    """(header without __metadata__, offset of the data) of a .safetensors file."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path} is not a safetensors file: it has fewer than 8 bytes")
        (n,) = struct.unpack("<Q", head)
        if n > Path(path).stat().st_size - 8:
            raise ValueError(f"{path} is not a safetensors file: its header length {n} exceeds the file")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header, 8 + n


def _tensor(data, info, name):
    if info["dtype"] not in DTYPES:
        raise ValueError(f"tensor {name!r} has dtype {info['dtype']}, which this reader does not know")
    dtype = np.dtype(DTYPES[info["dtype"]])
    start, end = info["data_offsets"]
    count = int(np.prod(info["shape"], dtype=np.int64))
    if end - start != count * dtype.itemsize:
        raise ValueError(f"tensor {name!r}: {end - start} bytes for shape {info['shape']} of {info['dtype']}")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=start).reshape(info["shape"])
    return array.astype(dtype.newbyteorder("="))  # a writable copy in native byte order


def load_file(path):
    """Every tensor of the file: name -> numpy array (a writable copy, native byte order)."""
    header, offset = read_header(path)
    data = Path(path).read_bytes()[offset:]
    return {name: _tensor(data, info, name) for name, info in header.items()}


class safe_open:  # noqa: N801 (the name of the function it stands in for)
    """`with safe_open(path, framework="np") as f`: f.keys() and f.get_tensor(name), reading one tensor at a time."""

    def __init__(self, path, framework="np"):
        if framework not in ("np", "numpy"):
            raise ValueError(f'framework must be "np", got {framework!r}')
        self.path = path
        self.header, self.offset = read_header(path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return list(self.header)

    def get_tensor(self, name):
        if name not in self.header:
            raise KeyError(name)
        start, end = self.header[name]["data_offsets"]
        with open(self.path, "rb") as f:
            f.seek(self.offset + start)
            data = f.read(end - start)
        info = dict(self.header[name], data_offsets=[0, end - start])
        return _tensor(data, info, name)
