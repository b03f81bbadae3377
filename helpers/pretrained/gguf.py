"""A GGUF reader in struct and numpy alone (so it also runs in the browser), and the dequantisation of its blocks.

The format (version 3, little-endian): b"GGUF", the version (u32), the tensor count and the metadata count
(u64 each); then the metadata, each a key (a string: u64 length, UTF-8 bytes), a value type (u32) and the
value; then each tensor's name, its number of axes (u32), its sizes (u64 each, the fastest-changing first),
its type (u32) and the offset of its data (u64); then, from the next multiple of general.alignment (32),
the tensors' data. A matrix of ne = (n_in, n_out) is n_out rows of n_in numbers: numpy shape (n_out, n_in).

Quantised types pack 32 numbers in a block: Q8_0 is an f16 scale d and 32 int8 q (w = d·q); Q4_1 is an f16
scale d, an f16 minimum m and 16 bytes of 4-bit q, the low nibbles first (w = d·q + m).
Taught in 12_a_real_language_model.
"""

import struct
from pathlib import Path

import numpy as np

__all__ = ["GGUF_TYPES", "read_gguf", "dequantize_q8_0", "dequantize_q4_1", "dequantize"]

# metadata value types: struct format of the scalar ones (8 = string, 9 = array)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# tensor types this reader knows: name, numbers per block, bytes per block
GGUF_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 3: ("Q4_1", 32, 20), 8: ("Q8_0", 32, 34)}


class _Reader:
    """Reads GGUF's little-endian values one after another from a bytes-like buffer."""

    def __init__(self, data):
        self.data, self.pos = memoryview(data), 0

    def scalar(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.scalar("<Q")
        text = str(self.data[self.pos : self.pos + n], "utf-8")
        self.pos += n
        return text

    def value(self, kind):
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind, n = self.scalar("<I"), self.scalar("<Q")
            if item_kind in _SCALARS and item_kind != 7:  # numbers: one numpy read, then plain Python numbers
                array = np.frombuffer(self.data, _SCALARS[item_kind], count=n, offset=self.pos)
                self.pos += array.nbytes
                return array.tolist()
            return [self.value(item_kind) for _ in range(n)]
        raise ValueError(f"unknown GGUF metadata value type {kind} at byte {self.pos}")


def _header(reader):
    """The counts of tensors and of metadata entries, after checking the magic bytes and the version."""
    if bytes(reader.data[:4]) != b"GGUF":
        raise ValueError(f"not a GGUF file: it starts with {bytes(reader.data[:4])!r}, not b'GGUF'")
    reader.pos = 4
    version, n_tensors, n_metadata = reader.scalar("<I"), reader.scalar("<Q"), reader.scalar("<Q")
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}: this reader knows versions 2 and 3")
    return n_tensors, n_metadata


def _tensor_info(reader):
    """(name, numpy shape, type, offset) of the next tensor: GGUF lists the sizes fastest-changing first."""
    name, n_axes = reader.string(), reader.scalar("<I")
    ne = [reader.scalar("<Q") for _ in range(n_axes)]
    kind, offset = reader.scalar("<I"), reader.scalar("<Q")
    if kind not in GGUF_TYPES:
        raise ValueError(f"tensor {name!r} has GGUF type {kind}; this reader knows {sorted(GGUF_TYPES)}")
    return name, tuple(reversed(ne)), kind, offset


def read_gguf(data):
    """The metadata and the tensors of a GGUF file's bytes (or of its path).

    The metadata's values are plain Python numbers, strings and lists. Each tensor is (type name, numpy shape,
    its raw bytes as a uint8 array viewing `data`, no copy): dequantize() turns it into float32 numbers.
    Shapes: -> {key: value}, {name: (type, shape, (n_bytes,) uint8)}.
    """
    if isinstance(data, (str, Path)):
        data = Path(data).read_bytes()
    reader = _Reader(data)
    n_tensors, n_metadata = _header(reader)
    metadata = {reader.string(): reader.value(reader.scalar("<I")) for _ in range(n_metadata)}
    infos = [_tensor_info(reader) for _ in range(n_tensors)]
    alignment = metadata.get("general.alignment", 32)
    start = -(-reader.pos // alignment) * alignment  # the data begins at the next multiple of the alignment
    raw = np.frombuffer(data, dtype=np.uint8)
    tensors = {}
    for name, shape, kind, offset in infos:
        type_name, per_block, block_bytes = GGUF_TYPES[kind]
        n_bytes = int(np.prod(shape)) // per_block * block_bytes
        tensors[name] = (type_name, shape, raw[start + offset : start + offset + n_bytes])
    return metadata, tensors


def dequantize_q8_0(blocks):
    """The numbers of Q8_0 blocks: each block is an f16 scale d and 32 int8 q, and w = d·q.

    Shapes: blocks (n, 34) uint8 -> (n, 32) float32.
    """
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (n, 1): one scale per block
    q = blocks[:, 2:].view(np.int8)  # (n, 32): the numbers, -128..127
    return d * q  # (n, 1) * (n, 32) -> (n, 32) float32


def dequantize_q4_1(blocks):
    """The numbers of Q4_1 blocks: an f16 scale d, an f16 minimum m, 16 bytes of two 4-bit q each; w = d·q + m.

    Byte j holds number j in its low four bits and number j + 16 in its high four bits.
    Shapes: blocks (n, 20) uint8 -> (n, 32) float32.
    """
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)  # (n, 1)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)  # (n, 1)
    packed = blocks[:, 4:]  # (n, 16)
    w = np.empty((len(blocks), 32), dtype=np.float32)
    w[:, :16] = packed & 0x0F  # numbers 0..15 of the block: the low four bits
    w[:, 16:] = packed >> 4  # numbers 16..31: the high four bits
    w *= d  # in place: a layer's weights are millions of numbers, so no temporary copies
    w += m
    return w


def dequantize(tensor):
    """A tensor from read_gguf() as float32 numbers.

    Shapes: (type, shape, raw bytes) -> shape, float32.
    """
    type_name, shape, raw = tensor
    if type_name == "F32":
        return raw.view(np.float32).reshape(shape).copy()
    if type_name == "F16":
        return raw.view(np.float16).astype(np.float32).reshape(shape)
    unpack, block_bytes = (dequantize_q8_0, 34) if type_name == "Q8_0" else (dequantize_q4_1, 20)
    return unpack(raw.reshape(-1, block_bytes)).reshape(shape)  # blocks run along each row: rows of n_in numbers
