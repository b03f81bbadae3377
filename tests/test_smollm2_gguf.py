"""helpers.pretrained.gguf: the GGUF reader and the Q8_0 / Q4_1 blocks, on hand-made files and on SmolLM2's."""

import struct

import numpy as np
import pytest

from helpers.pretrained import gguf
from helpers.pretrained.smollm2 import SMOLLM2_SIZE, smollm2_path


def gguf_string(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def tiny_gguf(tensors, metadata=b"", n_metadata=0, version=3):
    """A GGUF file's bytes: the header, the metadata given as bytes, then (name, ne, type, raw bytes) tensors."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), n_metadata) + metadata
    infos, data = b"", b""
    for name, ne, kind, raw in tensors:
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        infos += struct.pack("<IQ", kind, len(data))
        data += raw + b"\0" * (-len(raw) % 32)  # each tensor's data starts on a multiple of 32
    body = head + infos
    return body + b"\0" * (-len(body) % 32) + data


def q8_0_block(d, q):
    return np.float16(d).tobytes() + np.asarray(q, dtype=np.int8).tobytes()


def q4_1_block(d, m, q):
    q = np.asarray(q, dtype=np.uint8)
    return np.float16(d).tobytes() + np.float16(m).tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()


def test_a_q8_0_block_is_its_scale_times_its_bytes():
    q = np.arange(-16, 16)
    block = np.frombuffer(q8_0_block(0.5, q), dtype=np.uint8)[None]  # (1, 34)
    np.testing.assert_array_equal(gguf.dequantize_q8_0(block), 0.5 * q[None].astype(np.float32))


def test_a_q4_1_block_holds_the_low_nibbles_first_then_the_high_ones():
    q = np.arange(32) % 16  # numbers 0..15, then 0..15 again
    w = gguf.dequantize_q4_1(np.frombuffer(q4_1_block(0.25, -1.0, q), dtype=np.uint8)[None])  # (1, 32)
    np.testing.assert_array_equal(w[0], (0.25 * q - 1.0).astype(np.float32))
    # byte j: number j in the low four bits, number j + 16 in the high four bits (not j and j + 1)
    one = q4_1_block(1.0, 0.0, [1] + [0] * 15 + [2] + [0] * 15)
    assert one[4] == 0x21
    assert gguf.dequantize_q4_1(np.frombuffer(one, dtype=np.uint8)[None])[0, [0, 1, 16]].tolist() == [1.0, 0.0, 2.0]


def test_read_gguf_reads_metadata_of_every_kind_and_tensors_with_numpy_shapes():
    metadata = (
        gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
        + gguf_string("llama.block_count") + struct.pack("<II", 4, 30)
        + gguf_string("llama.rope.freq_base") + struct.pack("<If", 6, 100000.0)
        + gguf_string("tokens") + struct.pack("<IIQ", 9, 8, 2) + gguf_string("a") + gguf_string("Ġb")
        + gguf_string("types") + struct.pack("<IIQ", 9, 5, 3) + struct.pack("<3i", 1, 3, -1)
        + gguf_string("flag") + struct.pack("<I?", 7, True)
    )  # fmt: skip
    matrix = np.arange(6, dtype=np.float32).reshape(2, 3)  # 2 rows of 3: ne = (3, 2)
    blocks = q4_1_block(2.0, 1.0, np.arange(32) % 16) * 2  # (2, 32) as 2 blocks: ne = (32, 2)
    data = tiny_gguf([("m", (3, 2), 0, matrix.tobytes()), ("q", (32, 2), 3, blocks)], metadata, n_metadata=6)
    meta, tensors = gguf.read_gguf(data)
    assert meta == {
        "general.architecture": "llama",
        "llama.block_count": 30,
        "llama.rope.freq_base": 100000.0,
        "tokens": ["a", "Ġb"],
        "types": [1, 3, -1],
        "flag": True,
    }
    assert type(meta["llama.block_count"]) is int and type(meta["types"][0]) is int  # never numpy scalars
    assert tensors["m"][:2] == ("F32", (2, 3))
    np.testing.assert_array_equal(gguf.dequantize(tensors["m"]), matrix)
    assert tensors["q"][:2] == ("Q4_1", (2, 32))
    np.testing.assert_array_equal(gguf.dequantize(tensors["q"]), np.tile(2.0 * (np.arange(32) % 16) + 1.0, (2, 1)))


def test_read_gguf_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match=r"not a GGUF file: it starts with b'PK"):
        gguf.read_gguf(b"PK\x03\x04" + bytes(60))
    with pytest.raises(ValueError, match="GGUF version 1"):
        gguf.read_gguf(tiny_gguf([], version=1))
    with pytest.raises(ValueError, match=r"tensor 'x' has GGUF type 2"):  # Q4_0: not in this file
        gguf.read_gguf(tiny_gguf([("x", (32,), 2, bytes(18))]))


@pytest.fixture(scope="module")
def smollm2_file():
    data = smollm2_path().read_bytes()
    assert len(data) == SMOLLM2_SIZE
    return gguf.read_gguf(data)


def test_smollm2s_file_holds_what_the_model_needs(smollm2_file):
    metadata, tensors = smollm2_file
    assert metadata["general.architecture"] == "llama"
    assert len(tensors) == 272  # 30 layers of 9 tensors, the embedding and the final norm; no separate output
    kinds = {}
    for kind, _, _ in tensors.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    assert tensors["token_embd.weight"][:2] == ("Q8_0", (49152, 576))
    assert tensors["blk.0.attn_k.weight"][:2] == ("Q4_1", (192, 576))  # 3 key heads of 64
    assert tensors["blk.0.ffn_down.weight"][:2] == ("Q4_1", (576, 1536))


def test_dequantizing_smollm2s_embedding_matches_a_loop_over_its_first_blocks(smollm2_file):
    _, tensors = smollm2_file
    _, _, raw = tensors["token_embd.weight"]
    row = gguf.dequantize(tensors["token_embd.weight"])[7]  # token 7's vector: its 576 numbers are 18 blocks
    blocks = raw[7 * 18 * 34 : 8 * 18 * 34].tobytes()
    loop = []
    for b in range(18):
        block = blocks[34 * b : 34 * (b + 1)]
        d = float(np.frombuffer(block[:2], dtype=np.float16)[0])
        loop += [np.float32(d) * np.float32(q) for q in np.frombuffer(block[2:], dtype=np.int8)]
    np.testing.assert_array_equal(row, np.float32(loop))
