#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): small valid or
nearly valid inputs that start the fuzzer deep in each format. The seeds are committed; rerun
this only when a format changes:  python3 tests/fuzz/make_seeds.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- GGUF (gguf/gguf_reader.h): v3 and v2 headers, metadata of every type, tensors.
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def gguf(version, kvs, tensors, data=b"", alignment=32):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    for name, ne, ttype, offset in tensors:
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ttype, offset)
    out += b"\0" * ((-len(out)) % alignment)
    return out + data


meta = [
    kv("general.architecture", 8, gstr("llama")),
    kv("general.alignment", 4, struct.pack("<I", 32)),
    kv("llama.context_length", 4, struct.pack("<I", 2048)),
    kv("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5)),
    kv("llama.rope.freq_base", 12, struct.pack("<d", 10000.0)),
    kv("general.flag", 7, b"\x01"),
    kv("general.small", 0, b"\x07"),
    kv("general.neg", 5, struct.pack("<i", -3)),
    kv("general.big", 11, struct.pack("<q", -(1 << 40))),
    kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 3) + gstr("a") + gstr("b") + gstr("<s>")),
    kv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0, -1, -2)),
]
write("gguf", "metadata_only", gguf(3, meta, []))
write("gguf", "v2_metadata", gguf(2, meta[:3], []))
write("gguf", "one_f32_tensor",
      gguf(3, meta[:2], [("w", [4, 2], 0, 0)], struct.pack("<8f", *range(8))))
write("gguf", "two_tensors_f16_q8",
      gguf(3, meta[:2], [("a", [4], 1, 0), ("b", [32], 8, 32)], b"\0" * 8 + b"\0" * 24 + b"\0" * 34))
write("gguf", "empty", gguf(3, [], []))

# --- transfer frames (frame_fuzz.cc): odd first byte = 60 header bytes sealed by the target.
def header60(ftype, payload_bytes=0, aux=0, request_id=7, n_blocks=1):
    return (b"SGKF" + struct.pack("<BBH", ftype, 0, 1) + struct.pack("<QQ", request_id, 3) +
            struct.pack("<7I", 1, 0, 2, n_blocks, 1, aux, payload_bytes) + struct.pack("<Q", 0))


def rng(request_id=7, layer=1, head=0, first=2, n=4):
    return struct.pack("<QIIII", request_id, layer, head, first, n)


ack = struct.pack("<Q", 3) + rng() + b"\0" * 8
pull = rng() + struct.pack("<II", 1, 0)
write("frame", "sealed_data", b"\x01" + header60(10, 4096))
write("frame", "sealed_ack", b"\x01" + header60(11, len(ack) * 2) + ack + ack)
write("frame", "sealed_pull", b"\x01" + header60(12, len(pull)) + pull)
write("frame", "sealed_control", b"\x01" + header60(18, 12, aux=1))
write("frame", "raw_header", b"\x00" + header60(17) + b"\0\0\0\0")

# --- handshake (handshake_fuzz.cc): first byte bit0 = role (1 acceptor), bit1 = framed form.
def frame(ftype, payload=b"", aux=0):
    return struct.pack("<BIH", ftype, aux, len(payload)) + payload


hello = struct.pack("<IQIIIIBBQQ", 1, 0x1234, 2, 1, 8, 16, 1, 1, 0x1111, 0x2222)
write("handshake", "connector_gets_hello", b"\x02" + frame(1, hello) + frame(3))
write("handshake", "acceptor_gets_hello_auth", b"\x03" + frame(1, hello) +
      frame(2, struct.pack("<Q", 0x3333)))
write("handshake", "refused", b"\x02" + frame(4, b"no thanks", aux=9))
write("handshake", "other_version", b"\x03" + frame(1, struct.pack("<I", 2)))
write("handshake", "raw_garbage", b"\x00" + b"SGKF" + b"\0" * 60)

# --- node control plane (control_fuzz.cc): even first byte = binary control message,
# odd = JSON text for parser (first_byte // 2) % 6.
def control(ctype, body):
    return b"\x00" + struct.pack("<I", ctype) + struct.pack("<Q", 42) + body


write("control", "prefill_done", control(1, struct.pack("<iq", 5, 100)))
write("control", "prefill_failed", control(2, struct.pack("<II", 14, 4) + b"oops"))
write("control", "manifest", control(4, struct.pack("<II", 1, 2) + struct.pack("<4I", 0, 1, 0, 2)))
write("control", "requested", control(5, struct.pack("<I", 1) + struct.pack("<3I", 1, 0, 3)))
write("control", "started", control(6, struct.pack("<QQQ", 7, 1, 2)))  # id_hi, the KV ticket
sampling = '{"temperature": 0.7, "top_k": 40, "top_p": 0.9, "seed": 1}'
write("control", "node_info", b"\x01" + b'{"role": "decode", "model": "m", "transfer_address": '
      b'"tcp://127.0.0.1:9000", "n_layers": 2, "context_length": 4096}')
write("control", "prefill_call", b"\x03" + ('{"request_id": "' + "0" * 31 + '1", "kv_ticket": "'
      + "ab" * 16 + '", "generation": {"prompt": [1, 2, 3], '
      '"max_tokens": 4, "sampling": ' + sampling + ', "options": {}}, "mode": '
      '"smartgen", "decode_address": "127.0.0.1:9000", "timeout_ms": 1000}').encode())
write("control", "prefill_reply", b"\x05" + b'{"first_token": 3, "prefill_ms": 1.5, "n_prompt": 3}')
write("control", "decode_call", b"\x07" + ('{"request_id": "' + "0" * 31 + '1", "generation": {"prompt": [1, 2], '
      '"max_tokens": 4, "stop_at_eog": true, "forced_tokens": [5, 6], "sampling": ' + sampling +
      '}, "mode": "full", "timeout_ms": 100}').encode())
write("control", "decode_event", b"\x09" + b'{"event": "token", "index": 1, "token": 7}')
write("control", "request_ref", b"\x0b" + b'{"request_id": "0123456789abcdef0123456789abcdef"}')
write("control", "sampling", b"\x0d" + sampling.encode())

# --- OpenAI requests (openai_request_fuzz.cc): bodies for both endpoints.
write("openai_request", "completion", '{"prompt": "Hello", "max_tokens": 8, "temperature": 0, '
      '"stop": ["\\n", "END"], "seed": 3, "stream": true, "stream_options": '
      '{"include_usage": true}}')
write("openai_request", "token_prompt", '{"prompt": [1, 2, 3], "top_p": 0.5, "top_k": 4, '
      '"smartgen": {"mode": "smartgen", "return_token_ids": true, "options": {"budget": 8}}}')
write("openai_request", "chat", '{"model": "m", "messages": [{"role": "system", "content": '
      '"Be brief."}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}], '
      '"max_completion_tokens": 5}')
write("openai_request", "wrong_types", '{"prompt": 5, "max_tokens": "x", "n": 2}')

# --- TOML config (config_fuzz.cc).
write("config", "router", '# router\nprefill = ["10.0.0.1:8101", "10.0.0.2:8101"]\n'
      'decode = ["10.0.0.3:8201"]\nport = 8000\nhost = "0.0.0.0"\n')
write("config", "types", 'a = 1\nb = 2.5\nc = true\nd = "text with \\"quotes\\""\n'
      "e = 'literal'\nf = [1, 2, 3]\n")
write("config", "section", '[server]\nport = 1\n')
write("config", "multiline", 'x = """\nline\n"""\ny = [\n  "a",\n  "b",\n]\n')
