#!/usr/bin/env python3
"""Dump every layer's Q, K, V of a Hugging Face transformers model on one
long prompt, in the layout `lab run attention-file -dump` reads.

The tensors are the ones the attention kernel reads: Q and K after the
rotary embedding (and any q/k norm) as the model applies them, V as
projected, K and V per KV head (GQA: not repeated to the query heads), for
every token of the prompt; Q only for the chosen query rows (default: the
last token, a decode step over the whole prompt). They are captured by
wrapping transformers' registered "sdpa" attention function: the wrapper
records its inputs and calls the original, so the model computes exactly
what it computes without the script.

Usage:

    pip install torch transformers safetensors      # not needed by fp8lab itself
    python3 tools/dump_qkv.py --model meta-llama/Llama-3.1-8B --prompt-file long.txt \\
        --out dump/ [--layers all|0,15,31|0-3] [--queries last|all|last:N|i,j,...] \\
        [--max-tokens 32768] [--dtype bfloat16] [--format npy|safetensors] [--device cuda]
    bin/lab run attention-file -dump dump/ -promotions 0,1 -splits auto -o out/

writes (layout thd: [tokens, heads, head_dim]):

    --format npy (default): dump/layer{L}_q.npy  [rows, q_heads, head_dim]
                            dump/layer{L}_k.npy  [tokens, kv_heads, head_dim]
                            dump/layer{L}_v.npy  [tokens, kv_heads, v_head_dim]
                            float32 (bf16 widens exactly), float16 with --dtype float16
    --format safetensors:   dump/dump.safetensors, tensors layer{L}.q, layer{L}.k, layer{L}.v
                            in the model's dtype (BF16 kept)
    both:                   positions (positions.npy, int64: each query row's position in
                            the prompt), info.json (model, layers, shapes, softmax scale,
                            sliding windows, sinks) and the attention-file command to run

and prints the command. With several query rows the command has -causal
(each row sees the keys up to its position); with the last row alone it
is a decode over every key. A softmax scale other than 1/sqrt(head_dim)
(Gemma's query_pre_attn_scalar, MLA's) is passed as -softmax-scale. A
sliding-window layer or attention sinks (gpt-oss) are reported: attention-
file applies one -window to every layer of a dump and does not model
sinks, so run such layers from their own files.

Memory. GPU: the weights in --dtype (Llama-3.1-8B: 16 GB in bf16) and one
forward over the prompt through the base model (no LM head, so no
tokens x vocabulary logits; no KV cache): with PyTorch's fused SDPA
kernels about T x hidden x a few bytes per layer and the MLP's
T x intermediate, e.g. ~1 GB at 32k tokens for Llama-3.1-8B; a layer with
a sliding window gets a materialized T x T mask (1 GiB at 32k, 16 GiB at
128k). Host: --format npy writes each layer as it is reached (one layer
held: T x kv_heads x (head_dim + v_head_dim) x 4 bytes, 256 MiB for
Llama-3.1-8B at 32k); --format safetensors holds every layer until the end
in the model's dtype (4 GiB for Llama-3.1-8B at 32k, 16 GiB at 128k).
Disk: npy float32, 8 GiB for Llama-3.1-8B at 32k.

CI cannot download weights: the capture through a real model runs in the
tests only when torch and transformers are installed (a tiny Llama built
from a config, random weights); the argument parsing, the row selection,
the recorder and the writer are tested with NumPy arrays standing for the
tensors (tools/test_dump_qkv.py).
"""
import argparse
import json
import os
import sys

_LAYOUT_DOC = "layer{L}_q.npy, layer{L}_k.npy, layer{L}_v.npy, positions.npy (layout thd)"


def parse_args(argv=None):
    """Parse the command line (argv without the program name)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="Hugging Face model id or local folder")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt", help="the prompt text")
    g.add_argument("--prompt-file", help="a file holding the prompt")
    ap.add_argument("--layers", default="all", help="layers to dump: all, or a list of indices and ranges (0,15,31 or 0-3)")
    ap.add_argument("--queries", default="last",
                    help="query rows: last (default), all, last:N (the last N), or a list of 0-based token indices")
    ap.add_argument("--max-tokens", type=int, default=32768, help="truncate the prompt to this many tokens")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"], help="model dtype")
    ap.add_argument("--format", default="npy", choices=["npy", "safetensors"])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    args = ap.parse_args(argv)
    if args.max_tokens < 1:
        ap.error("--max-tokens must be at least 1")
    try:
        parse_layers(args.layers, 1 << 20)
        select_rows(args.queries, 1 << 40)
    except ValueError as e:
        ap.error(str(e))
    return args


def parse_layers(spec, n_layers):
    """The sorted layer indices spec names among n_layers: "all", or a
    comma-separated list of indices and inclusive ranges a-b."""
    if spec == "all":
        return list(range(n_layers))
    out = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                lo, hi = int(a), int(b)
                if lo > hi:
                    raise ValueError
                out.update(range(lo, hi + 1))
            else:
                out.add(int(part))
        except ValueError:
            raise ValueError(f"--layers: {part!r} is not an index or a range a-b") from None
    bad = [l for l in out if l < 0 or l >= n_layers]
    if bad:
        raise ValueError(f"--layers: {sorted(bad)} outside 0..{n_layers - 1} (the model has {n_layers} layers)")
    return sorted(out)


def select_rows(spec, tokens):
    """The sorted 0-based query rows spec names among tokens: "last",
    "all", "last:N" or a comma-separated list of indices (negative ones
    count from the end)."""
    if spec == "last":
        return [tokens - 1]
    if spec == "all":
        return list(range(tokens))
    if spec.startswith("last:"):
        try:
            n = int(spec[5:])
        except ValueError:
            raise ValueError(f"--queries: {spec!r}: last:N needs a number") from None
        if n < 1:
            raise ValueError(f"--queries: {spec!r}: N must be at least 1")
        return list(range(max(0, tokens - n), tokens))
    rows = set()
    for part in spec.split(","):
        try:
            i = int(part)
        except ValueError:
            raise ValueError(f"--queries: {part!r} is not a token index (or last, all, last:N)") from None
        if i < 0:
            i += tokens
        if i < 0 or i >= tokens:
            raise ValueError(f"--queries: {part} outside the prompt's {tokens} tokens")
        rows.add(i)
    return sorted(rows)


class DumpWriter:
    """Writes a dump: each layer as it comes (npy) or all at the end
    (safetensors). Arrays are NumPy arrays, or torch tensors for
    safetensors in a dtype NumPy lacks (bfloat16)."""

    def __init__(self, out, fmt="npy", npy_dtype="float32"):
        self.out, self.fmt, self.npy_dtype = out, fmt, npy_dtype
        self.tensors = {}
        self.layers = []
        os.makedirs(out, exist_ok=True)

    def add_layer(self, layer, q, k, v):
        """Adds layer's q [rows, q_heads, d], k [tokens, kv_heads, d] and v
        [tokens, kv_heads, dv] (layout thd)."""
        if len(q.shape) != 3 or len(k.shape) != 3 or tuple(k.shape[:2]) != tuple(v.shape[:2]) or q.shape[2] != k.shape[2]:
            raise ValueError(f"layer {layer}: shapes q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} "
                             "are not [rows, heads, d], [tokens, kv_heads, d], [tokens, kv_heads, dv]")
        if q.shape[1] % k.shape[1]:
            raise ValueError(f"layer {layer}: {q.shape[1]} query heads, not a multiple of {k.shape[1]} KV heads")
        self.layers.append(layer)
        if self.fmt == "npy":
            import numpy as np
            for name, x in (("q", q), ("k", k), ("v", v)):
                np.save(os.path.join(self.out, f"layer{layer}_{name}.npy"), np.ascontiguousarray(x, dtype=self.npy_dtype))
        else:
            for name, x in (("q", q), ("k", k), ("v", v)):
                self.tensors[f"layer{layer}.{name}"] = x

    def finish(self, positions, info):
        """Writes the positions (and, for safetensors, every tensor) and
        info.json; returns the attention-file command."""
        import numpy as np
        pos = np.asarray(positions, dtype=np.int64)
        if self.fmt == "npy":
            np.save(os.path.join(self.out, "positions.npy"), pos)
            target = self.out
        else:
            target = os.path.join(self.out, "dump.safetensors")
            first = next(iter(self.tensors.values()))
            if type(first).__module__.startswith("torch"):
                import torch
                from safetensors.torch import save_file
                tensors = {k: x.contiguous() for k, x in self.tensors.items()}
                tensors["positions"] = torch.from_numpy(pos)
            else:
                from safetensors.numpy import save_file
                tensors = {k: np.ascontiguousarray(x) for k, x in self.tensors.items()}
                tensors["positions"] = pos
            save_file(tensors, target, metadata={"format": "fp8lab attention-file dump", "layout": "thd"})
        cmd = ["lab", "run", "attention-file", "-dump", target]
        if len(pos) > 1 or (len(pos) == 1 and pos[0] != info.get("tokens", 0) - 1):
            cmd.append("-causal")
        scales = {s for s in info.get("softmax_scale", {}).values() if s is not None}
        d = info.get("head_dim")
        if len(scales) == 1 and d and abs(next(iter(scales)) - d ** -0.5) > 1e-7 * d ** -0.5:
            cmd += ["-softmax-scale", repr(next(iter(scales)))]
        info = dict(info, layers=self.layers, layout="thd", positions=[int(p) for p in pos], command=" ".join(cmd))
        with open(os.path.join(self.out, "info.json"), "w") as f:
            json.dump(info, f, indent=1)
        return " ".join(cmd)


class Recorder:
    """Receives each attention call's inputs, query [1, q_heads, T, d] and
    key, value [1, kv_heads, T, d] (transformers' layout), and hands the
    chosen query rows and every key and value to the writer in layout thd.
    to_array converts a tensor for the writer (NumPy arrays pass as
    they are)."""

    def __init__(self, layers, queries, writer, to_array=lambda x: x):
        self.layers, self.queries, self.writer, self.to_array = set(layers), queries, writer, to_array
        self.done, self.rows, self.tokens = set(), None, None
        self.scaling, self.window, self.sinks, self.shapes = {}, {}, {}, {}

    def __call__(self, layer, query, key, value, scaling=None, sliding_window=None, sinks=None):
        if layer not in self.layers or layer in self.done:
            return
        if query.shape[0] != 1:
            raise ValueError(f"layer {layer}: batch {query.shape[0]}: the dump is of one prompt")
        t = query.shape[2]
        if key.shape[2] != t:
            raise ValueError(f"layer {layer}: {t} query tokens and {key.shape[2]} keys: run the whole prompt at once (no cache)")
        if self.rows is None:
            self.tokens, self.rows = t, select_rows(self.queries, t)
        q = query[0][:, self.rows, :]  # [q_heads, rows, d]
        self.writer.add_layer(layer, self.to_array(_thd(q)), self.to_array(_thd(key[0])), self.to_array(_thd(value[0])))
        self.scaling[layer], self.window[layer], self.sinks[layer] = scaling, sliding_window, sinks is not None
        self.shapes[layer] = {"q_heads": int(query.shape[1]), "kv_heads": int(key.shape[1]),
                              "head_dim": int(query.shape[3]), "v_head_dim": int(value.shape[3])}
        self.done.add(layer)

    def info(self):
        first = self.shapes[min(self.shapes)]
        return dict(first, tokens=self.tokens, softmax_scale=self.scaling, sliding_window=self.window, sinks=self.sinks,
                    shapes=self.shapes)


def _thd(x):
    """[heads, tokens, d] → [tokens, heads, d] (NumPy or torch)."""
    if hasattr(x, "permute"):
        return x.permute(1, 0, 2)
    return x.transpose(1, 0, 2)


def capture(args, model=None, tokenizer=None):
    """Runs the prompt through the model with the sdpa attention function
    wrapped by a Recorder; returns the attention-file command. model and
    tokenizer, when given, replace the ones loaded from args.model."""
    import torch
    try:
        from transformers import AttentionInterface
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    except ImportError:
        sys.exit("transformers >= 4.48 is needed (its AttentionInterface)")
    from transformers import AutoModel, AutoTokenizer

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, args.dtype)
    if tokenizer is None:
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    text = args.prompt if args.prompt is not None else open(args.prompt_file, encoding="utf-8").read()
    ids = tokenizer(text, return_tensors="pt").input_ids[:, : args.max_tokens]
    if model is None:
        # The base model: no LM head, so no tokens × vocabulary logits.
        model = AutoModel.from_pretrained(args.model, torch_dtype=dtype, attn_implementation="sdpa")
    model.to(device).eval()
    n_layers = model.config.num_hidden_layers
    layers = parse_layers(args.layers, n_layers)
    npy_dtype = "float16" if args.dtype == "float16" else "float32"  # NumPy has no bfloat16: bf16 widens exactly
    writer = DumpWriter(args.out, args.format, npy_dtype)
    if args.format == "npy":
        to_array = lambda x: x.detach().to(torch.float32 if npy_dtype == "float32" else torch.float16).cpu().numpy()
    else:
        to_array = lambda x: x.detach().cpu().clone()
    rec = Recorder(layers, args.queries, writer, to_array)
    orig = ALL_ATTENTION_FUNCTIONS["sdpa"]

    def recording_sdpa(module, query, key, value, attention_mask, *a, **kw):
        rec(getattr(module, "layer_idx", None), query, key, value, scaling=kw.get("scaling", getattr(module, "scaling", None)),
            sliding_window=kw.get("sliding_window", getattr(module, "sliding_window", None)), sinks=getattr(module, "sinks", None))
        return orig(module, query, key, value, attention_mask, *a, **kw)

    AttentionInterface.register("sdpa", recording_sdpa)
    try:
        with torch.no_grad():
            model(ids.to(device), use_cache=False)
    finally:
        AttentionInterface.register("sdpa", orig)
    missing = sorted(set(layers) - rec.done)
    if missing:
        sys.exit(f"layers {missing} did not run through the sdpa attention function (a model without an sdpa path?)")
    info = dict(rec.info(), model=args.model, dtype=args.dtype, layers_dumped=layers, transformers_layers=n_layers)
    for l, w in rec.window.items():
        if w:
            print(f"warning: layer {l} has a sliding window of {w}: pass -window {w} for it (one window applies to a whole dump)", file=sys.stderr)
    if any(rec.sinks.values()):
        print("warning: the model has attention sinks, which attention-file does not model", file=sys.stderr)
    return writer.finish(rec.rows, info)


def main(argv=None):
    args = parse_args(argv)
    cmd = capture(args)
    print(f"wrote {args.out} ({_LAYOUT_DOC if args.format == 'npy' else 'dump.safetensors'}); run:\n  {cmd}")


if __name__ == "__main__":
    main()
