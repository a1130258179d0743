"""Tests of tools/dump_qkv.py: python3 -m unittest -v test_dump_qkv (from tools/).

NumPy arrays stand for the tensors in every test but the last, which needs
torch and transformers (a tiny Llama built from a config, random weights,
no download) and is skipped, saying so, when they are missing.
"""
import contextlib
import io
import json
import os
import tempfile
import unittest

import numpy as np

import dump_qkv


def _have(mod):
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


def fake(layer, heads, tokens, d, salt):
    """A [1, heads, tokens, d] array whose every value names its place."""
    h, t, i = np.meshgrid(np.arange(heads), np.arange(tokens), np.arange(d), indexing="ij")
    return (((layer * 8 + h) * 1024 + t) * 4 + (i % 4) + salt / 8).astype(np.float32)[None]


class ParseTest(unittest.TestCase):
    def test_defaults(self):
        a = dump_qkv.parse_args(["--model", "m", "--prompt", "hi", "--out", "o"])
        self.assertEqual((a.layers, a.queries, a.format, a.dtype, a.max_tokens), ("all", "last", "npy", "bfloat16", 32768))

    def test_refused(self):
        for argv in (["--model", "m", "--out", "o"],  # no prompt
                     ["--model", "m", "--prompt", "x", "--prompt-file", "f", "--out", "o"],
                     ["--model", "m", "--prompt", "x", "--out", "o", "--queries", "first"],
                     ["--model", "m", "--prompt", "x", "--out", "o", "--queries", "last:0"],
                     ["--model", "m", "--prompt", "x", "--out", "o", "--layers", "3-1"],
                     ["--model", "m", "--prompt", "x", "--out", "o", "--max-tokens", "0"]):
            with self.subTest(argv=argv), contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
                dump_qkv.parse_args(argv)

    def test_rows(self):
        for spec, want in (("last", [9]), ("all", list(range(10))), ("last:3", [7, 8, 9]), ("last:50", list(range(10))),
                           ("0,5,-1", [0, 5, 9]), ("5,5", [5])):
            with self.subTest(spec=spec):
                self.assertEqual(dump_qkv.select_rows(spec, 10), want)
        for spec in ("10", "-11", "x", "last:x"):
            with self.subTest(spec=spec), self.assertRaises(ValueError):
                dump_qkv.select_rows(spec, 10)

    def test_layers(self):
        for spec, want in (("all", [0, 1, 2, 3]), ("3,0", [0, 3]), ("1-2", [1, 2]), ("0,1-3", [0, 1, 2, 3])):
            with self.subTest(spec=spec):
                self.assertEqual(dump_qkv.parse_layers(spec, 4), want)
        for spec in ("4", "-1", "a", "2-1"):
            with self.subTest(spec=spec), self.assertRaises(ValueError):
                dump_qkv.parse_layers(spec, 4)


class WriterTest(unittest.TestCase):
    def record(self, out, fmt, layers=(0, 2), queries="last:3"):
        w = dump_qkv.DumpWriter(out, fmt)
        rec = dump_qkv.Recorder(layers, queries, w)
        for l in range(3):  # the model runs every layer; the recorder keeps the chosen ones
            rec(l, fake(l, 4, 20, 8, 0), fake(l, 2, 20, 8, 1), fake(l, 2, 20, 8, 2), scaling=8 ** -0.5)
            rec(l, fake(l, 4, 20, 8, 5), fake(l, 2, 20, 8, 5), fake(l, 2, 20, 8, 5))  # a second call is ignored
        return w.finish(rec.rows, dict(rec.info(), model="fake"))

    def test_npy(self):
        with tempfile.TemporaryDirectory() as out:
            cmd = self.record(out, "npy")
            self.assertEqual(sorted(os.listdir(out)), ["info.json", "layer0_k.npy", "layer0_q.npy", "layer0_v.npy",
                                                       "layer2_k.npy", "layer2_q.npy", "layer2_v.npy", "positions.npy"])
            for l in (0, 2):
                q, k, v = (np.load(os.path.join(out, f"layer{l}_{r}.npy")) for r in "qkv")
                np.testing.assert_array_equal(q, fake(l, 4, 20, 8, 0)[0][:, 17:, :].transpose(1, 0, 2))
                np.testing.assert_array_equal(k, fake(l, 2, 20, 8, 1)[0].transpose(1, 0, 2))
                np.testing.assert_array_equal(v, fake(l, 2, 20, 8, 2)[0].transpose(1, 0, 2))
                self.assertEqual((q.dtype, q.shape, k.shape), (np.float32, (3, 4, 8), (20, 2, 8)))
            np.testing.assert_array_equal(np.load(os.path.join(out, "positions.npy")), [17, 18, 19])
            with open(os.path.join(out, "info.json")) as f:
                info = json.load(f)
            self.assertEqual((info["layers"], info["tokens"], info["q_heads"], info["kv_heads"]), ([0, 2], 20, 4, 2))
            self.assertEqual(cmd, f"lab run attention-file -dump {out} -causal")

    def test_decode_command(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(self.record(out, "npy", queries="last"), f"lab run attention-file -dump {out}")

    @unittest.skipUnless(_have("safetensors"), "the safetensors package is not installed")
    def test_safetensors(self):
        from safetensors.numpy import load_file
        with tempfile.TemporaryDirectory() as out:
            cmd = self.record(out, "safetensors")
            t = load_file(os.path.join(out, "dump.safetensors"))
            self.assertEqual(sorted(t), ["layer0.k", "layer0.q", "layer0.v", "layer2.k", "layer2.q", "layer2.v", "positions"])
            np.testing.assert_array_equal(t["layer2.k"], fake(2, 2, 20, 8, 1)[0].transpose(1, 0, 2))
            self.assertTrue(cmd.endswith("dump.safetensors -causal"))

    def test_bad_shapes(self):
        with tempfile.TemporaryDirectory() as out:
            rec = dump_qkv.Recorder([0], "last", dump_qkv.DumpWriter(out))
            with self.assertRaises(ValueError):
                rec(0, fake(0, 3, 20, 8, 0), fake(0, 2, 20, 8, 0), fake(0, 2, 20, 8, 0))  # 3 heads over 2 KV heads
            with self.assertRaises(ValueError):
                rec(0, fake(0, 4, 20, 8, 0), fake(0, 2, 21, 8, 0), fake(0, 2, 21, 8, 0))  # a cache


@unittest.skipUnless(_have("torch") and _have("transformers"), "torch and transformers are not installed (the capture through a real model)")
class TinyLlamaTest(unittest.TestCase):
    def test_capture(self):
        import torch
        from transformers import LlamaConfig, LlamaModel
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
        torch.manual_seed(0)
        cfg = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=16, max_position_embeddings=256, attn_implementation="sdpa")
        model = LlamaModel(cfg).eval()
        ids = torch.randint(0, 64, (1, 40))

        class Tok:
            def __call__(self, text, return_tensors=None):
                return type("Enc", (), {"input_ids": ids})()

        with torch.no_grad():
            plain = model(ids, use_cache=False).last_hidden_state
        with tempfile.TemporaryDirectory() as out:
            args = dump_qkv.parse_args(["--model", "tiny", "--prompt", "x", "--out", out, "--queries", "last:2",
                                        "--dtype", "float32", "--device", "cpu"])
            cmd = dump_qkv.capture(args, model=model, tokenizer=Tok())
            with torch.no_grad():
                again = model(ids, use_cache=False).last_hidden_state
                torch.testing.assert_close(again, plain, rtol=0, atol=0)  # the wrapper is removed, and changed nothing
                # Layer 0's post-RoPE q and k, computed by hand.
                h = model.embed_tokens(ids)
                attn = model.layers[0].self_attn
                x = model.layers[0].input_layernorm(h)
                q = attn.q_proj(x).view(1, 40, 4, 16).transpose(1, 2)
                k = attn.k_proj(x).view(1, 40, 2, 16).transpose(1, 2)
                v = attn.v_proj(x).view(1, 40, 2, 16).transpose(1, 2)
                cos, sin = model.rotary_emb(h, torch.arange(40)[None])
                q, k = apply_rotary_pos_emb(q, k, cos, sin)
            np.testing.assert_allclose(np.load(os.path.join(out, "layer0_k.npy")), k[0].permute(1, 0, 2).numpy(), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(np.load(os.path.join(out, "layer0_v.npy")), v[0].permute(1, 0, 2).numpy(), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(np.load(os.path.join(out, "layer0_q.npy")), q[0, :, 38:].permute(1, 0, 2).numpy(), rtol=1e-6, atol=1e-6)
            self.assertEqual(sorted(f for f in os.listdir(out) if f.endswith("_k.npy")), ["layer0_k.npy", "layer1_k.npy", "layer2_k.npy"])
            self.assertIn("-causal", cmd)


if __name__ == "__main__":
    unittest.main()
