#!/usr/bin/env python3
"""Capture one attention layer's Q, K, V from a Hugging Face model, for
`lab run attention-file`.

The tensors are the ones the attention kernel reads: Q and K after the
rotary embedding (and any q/k norm), V as projected, for every token of a
prompt (a prefill). They are captured through transformers' attention
interface: a registered attention function records the layer's inputs and
then computes the layer with PyTorch's scaled_dot_product_attention, so the
model runs unchanged.

Usage:

    pip install torch transformers safetensors      # not needed by fp8lab itself
    python3 tools/dump_qkv.py --model meta-llama/Llama-3.1-8B --layer 15 \
        --prompt-file long.txt --out qkv/ [--dtype bfloat16] [--format npy|safetensors]

writes, with layout htd ([heads, tokens, head_dim], the batch of 1 dropped):

    qkv/q.npy  qkv/k.npy  qkv/v.npy          (--format npy: float32, or float16 with --dtype float16)
    qkv/qkv.safetensors (tensors q, k, v)    (--format safetensors: the model's dtype, BF16 kept)

and then, for the last query token over the whole prompt (a decode step):

    lab run attention-file -layout htd -q qkv/q_last.npy -k qkv/k.npy -v qkv/v.npy
    # or every query token, causal:
    lab run attention-file -layout htd -causal -q qkv/q.npy -k qkv/k.npy -v qkv/v.npy -k-block-m 128 -k-block-n 128
    # from safetensors:
    lab run attention-file -layout htd -causal -q qkv/qkv.safetensors:q -k qkv/qkv.safetensors:k -v qkv/qkv.safetensors:v

The softmax scale of attention-file defaults to 1/sqrt(head_dim); models
with another scaling (Gemma's query_pre_attn_scalar, MLA's) print theirs:
pass it as -softmax-scale. Models with sinks (gpt-oss) or sliding windows
need the matching options. CI cannot download weights: this script is not
run by the tests (written against transformers >= 4.48's
AttentionInterface; check the printed shapes on your model).
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="Hugging Face model id or local folder")
    ap.add_argument("--layer", type=int, required=True, help="decoder layer index (0-based)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt", help="the prompt text")
    g.add_argument("--prompt-file", help="a file holding the prompt")
    ap.add_argument("--max-tokens", type=int, default=32768, help="truncate the prompt to this many tokens")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"], help="model dtype")
    ap.add_argument("--format", default="npy", choices=["npy", "safetensors"])
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--device", default="cuda" if _has_cuda() else "cpu")
    args = ap.parse_args()

    import numpy as np
    import torch
    from transformers import AttentionInterface, AutoModelForCausalLM, AutoTokenizer

    dtype = getattr(torch, args.dtype)
    tok = AutoTokenizer.from_pretrained(args.model)
    text = args.prompt if args.prompt is not None else open(args.prompt_file, encoding="utf-8").read()
    ids = tok(text, return_tensors="pt").input_ids[:, : args.max_tokens].to(args.device)

    captured = {}

    def dump_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        # query: [batch, heads, tokens, head_dim] after RoPE; key/value: [batch, kv_heads, tokens, head_dim].
        if getattr(module, "layer_idx", None) == args.layer and not captured:
            captured.update(q=query[0].detach(), k=key[0].detach(), v=value[0].detach(),
                            scaling=scaling, sliding_window=kwargs.get("sliding_window"),
                            sinks=getattr(module, "sinks", None))
        groups = query.shape[1] // key.shape[1]
        k = key.repeat_interleave(groups, dim=1)
        v = value.repeat_interleave(groups, dim=1)
        mask = attention_mask[:, :, :, : k.shape[-2]] if attention_mask is not None else None
        out = torch.nn.functional.scaled_dot_product_attention(
            query, k, v, attn_mask=mask, is_causal=mask is None and query.shape[2] > 1, scale=scaling)
        return out.transpose(1, 2).contiguous(), None

    AttentionInterface.register("fp8lab_dump", dump_attention)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=dtype, attn_implementation="fp8lab_dump")
    model.to(args.device).eval()
    with torch.no_grad():
        model(ids)
    if not captured:
        sys.exit(f"layer {args.layer} was not reached (the model has {model.config.num_hidden_layers} layers?)")

    os.makedirs(args.out, exist_ok=True)
    q, k, v = captured["q"], captured["k"], captured["v"]
    info = {"model": args.model, "layer": args.layer, "tokens": int(q.shape[1]), "q_heads": int(q.shape[0]),
            "kv_heads": int(k.shape[0]), "head_dim": int(q.shape[2]), "v_head_dim": int(v.shape[2]),
            "layout": "htd", "softmax_scale": captured["scaling"], "sliding_window": captured["sliding_window"],
            "has_sinks": captured["sinks"] is not None}
    if args.format == "safetensors":
        from safetensors.torch import save_file
        save_file({"q": q.contiguous().cpu(), "k": k.contiguous().cpu(), "v": v.contiguous().cpu(),
                   "q_last": q[:, -1:, :].contiguous().cpu()}, os.path.join(args.out, "qkv.safetensors"))
    else:
        npdt = np.float16 if args.dtype == "float16" else np.float32  # NumPy has no bfloat16: bf16 widens exactly to float32
        for name, x in (("q", q), ("k", k), ("v", v), ("q_last", q[:, -1:, :])):
            np.save(os.path.join(args.out, name + ".npy"), x.float().cpu().numpy().astype(npdt))
    with open(os.path.join(args.out, "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info, indent=1))


def _has_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


if __name__ == "__main__":
    main()
