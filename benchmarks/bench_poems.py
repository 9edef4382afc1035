"""全唐诗's regular forms on the CPU for a time budget (default 10 minutes): val loss against minutes, then the
form score, novelty and a few poems.

Trains `attnlab train --corpus <全唐诗 folder>`'s defaults (the `poems-small` preset, the four regular forms,
simplified script, 10% of the poems held out by poem, the best validation weights kept, early stopping) with
`--minutes` as the budget, then samples N poems, each from a two-character prompt (the first two characters
of a held-out poem, read after the end-of-text mark as a poem's start) at temperature 0.8, top-k 40, until the
model ends the poem (at most 100 characters):

- form score: the share of them that are a 五绝/七绝/五律/七律 (4 or 8 verses, all 5 or all 7 characters,
  "，" after odd verses and "。？！" after even ones: attnlab.text.forms.classify);
- novelty: the share of their 5-character verses found verbatim as a verse of a training poem, and the
  longest run of characters (marks included) found verbatim in the training poems;
- rhyme: not measured (no rhyme table is bundled, and nothing is downloaded).

    python benchmarks/bench_poems.py [--minutes 10] [--threads N] [--samples 50] [--out DIR] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

import torch

from attnlab.sampling import generate
from attnlab.text.forms import classify, copied_verses, longest_copied_span
from attnlab.train import new_run

# ../shared/data beside the repository (a worktree sits one folder deeper)
CORPUS = next(
    (
        p / "shared" / "data" / "chinese-poetry" / "全唐诗"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "data" / "chinese-poetry" / "全唐诗").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "chinese-poetry" / "全唐诗",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="what --minutes counts: wall-clock time, or this process's CPU time (on a machine "
        "shared with other work, cpu gives the run the arithmetic an idle machine would)",
    )
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--script", default="simplified")
    parser.add_argument("--form", default=None, help="forms to train on (default: the four regular forms)")
    parser.add_argument("--preset", default=None)
    parser.add_argument("--dropout", type=float, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--align",
        choices=("poems", "any"),
        default="poems",
        help="training windows start at a poem's beginning (default) or anywhere in the stream",
    )
    parser.add_argument("--out", type=Path, default=None, help="also save the checkpoint here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    run = new_run(
        args.corpus,
        script=args.script,
        form=args.form,
        preset=args.preset,
        dropout=args.dropout,
        batch_size=args.batch_size,
        minutes=args.minutes,
        device="cpu",
        seed=0,
        align=args.align == "poems",
        clock=time.process_time if args.clock == "cpu" else None,
    )
    cfg, mc = run.config, run.model.config
    n_params = sum(p.numel() for p in run.model.parameters())
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at start; {len(run.texts)} poems ({run.corpus_options}), "
        f"{len(run.data.train):,} train / {len(run.data.val):,} val tokens ({len(run.held_out)} poems held out), "
        f"vocab {run.tokenizer.vocab_size}; GPT {mc.n_layers}x{mc.n_heads} heads, d_model {mc.d_model}, context "
        f"{mc.context_length}, dropout {mc.dropout}, {n_params:,} parameters; batch {cfg.batch_size}, lr {cfg.lr}, "
        f"eval every {cfg.eval_interval} steps, patience {cfg.patience}; --minutes {args.minutes} of {args.clock} time",
        flush=True,
    )
    cpu0, wall0 = time.process_time(), time.perf_counter()

    def show(event: dict) -> None:
        if event["type"] == "step" and event["val_loss"] is not None:
            print(
                f"  {event['seconds'] / 60:5.2f} min {args.clock}  step {event['step']:5d}  loss {event['loss']:.4f}  "
                f"val loss {event['val_loss']:.4f}  (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )

    result = run.trainer.run(callback=show)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    print(
        f"stopped after {result.step} steps, {wall / 60:.2f} min wall, {cpu / 60:.2f} min CPU "
        f"({cpu / max(wall, 1e-9):.2f} cores busy on average), reason: {result.stop_reason or 'steps'}; "
        f"best val loss {result.best_val_loss:.4f} at step {result.best_step}"
        + (" (weights restored)" if result.restored_best else ""),
        flush=True,
    )
    if args.out:
        print(f"saved {run.save(args.out)}")

    rng = random.Random(0)
    prompts = [p[:2] for p in rng.sample(run.held_out, min(args.samples, len(run.held_out)))]
    poems, t0 = [], time.perf_counter()
    for i, prompt in enumerate(prompts):
        gen = generate(
            run.model,
            run.tokenizer,
            prompt,
            max_new_tokens=100,
            temperature=0.8,
            top_k=40,
            seed=i,
            start_of_text=True,
            n_candidates=1,
        )
        poems.append(gen.text)
    forms = [classify(p) for p in poems]
    good = sum(f is not None for f in forms)
    training = [p for p in run.texts if p not in set(run.held_out)]
    copied, made = copied_verses(poems, training, 5)
    joined = "\n\n".join(training)
    spans = [longest_copied_span(p, joined) for p in poems]
    longest = max(spans, key=len, default="")
    print(f"{len(poems)} poems sampled in {time.perf_counter() - t0:.0f} s")
    print(
        f"form score: {good}/{len(poems)} = {good / max(1, len(poems)):.0%} "
        f"({', '.join(f'{k} {forms.count(k)}' for k in ('wujue', 'qijue', 'wulv', 'qilv'))})"
    )
    print(
        f"novelty: {copied}/{made} five-character verses copied verbatim from training poems "
        f"({copied / max(1, made):.1%}); longest copied span {len(longest)} characters: {longest!r}"
    )
    print("rhyme: not measured (no rhyme table offline)")
    print("the first poems, as they came:")
    for p, f in list(zip(poems, forms))[:6]:
        print(f"  [{f or 'no form'}] " + p.replace("\n", " / "))


if __name__ == "__main__":
    main()
