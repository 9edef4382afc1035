"""The loop's fast paths compute what the plain path does: bf16 autocast, fused AdamW, torch.compile, the
token cache; CUDA-marked tests run only where a GPU is (benchmarks/gpu_check.sh runs them there).

torch.compile takes minutes on a busy 2-core CPU, so its test runs only with ATTNLAB_TEST_COMPILE=1.
"""

from __future__ import annotations

import os

import pytest
import torch

from attnlab.io.threads import SMALL_MODEL
from attnlab.models import GPT, preset
from attnlab.sampling import generate
from attnlab.text import POEM, CharTokenizer
from attnlab.train import TokenData, TrainConfig, Trainer, make_optimizer, new_run, speed, token_cache, token_stream

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.slow]  # trains or starts processes

TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer. " * 40


def small_trainer(tokens: TokenData, vocab: int, device="cpu", **settings) -> Trainer:
    """nanoGPT's CPU-recipe GPT (over SMALL_MODEL parameters, so AdamW runs fused), on short windows."""
    torch.manual_seed(0)
    model = GPT(preset("shakespeare-cpu", vocab_size=vocab, context_length=16))
    cfg = TrainConfig(**{**dict(steps=4, batch_size=4, lr=1e-3, eval_iters=2), **settings})
    return Trainer(model, tokens, cfg, device=device)


def losses(trainer: Trainer, steps: int = 4) -> list[float]:
    return [float(trainer.train_step()) for _ in range(steps)]


@pytest.fixture(scope="module")
def corpus():
    tok = CharTokenizer.train([TEXT])
    return TokenData.from_texts([TEXT], tok, val_fraction=0.1), tok.vocab_size


def test_precision_auto_is_bf16_on_cuda_only():
    assert speed.resolve_precision("auto", "cpu") == "fp32"
    assert speed.resolve_precision("auto", "cuda") == "bf16"
    assert speed.resolve_precision("bf16", "cpu") == "bf16"
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp8")


def test_bf16_autocast_training_still_recites_the_poem():
    run = new_run("poem", seed=0, device="cpu", precision="bf16")
    assert run.trainer.precision == "bf16"
    with speed.autocast("bf16", "cpu"):
        assert run.model(torch.tensor([[0, 1]])).dtype == torch.bfloat16  # autocast really is on
    result = run.trainer.run()
    assert result.history[-1]["loss"] < 0.05
    gen = generate(run.model, run.tokenizer, "床前", max_new_tokens=20, greedy=True)
    assert gen.text == POEM and gen.stop_reason == "eot"


def test_bf16_loss_is_near_the_fp32_loss(corpus):
    data, vocab = corpus
    fp32, bf16 = (losses(small_trainer(data, vocab, precision=p), 3) for p in ("fp32", "bf16"))
    assert bf16 == pytest.approx(fp32, rel=2e-2)  # bf16 keeps 8 bits of mantissa: agreement to about 1%


def test_fused_adamw_on_a_larger_cpu_model_matches_the_reference_loop(corpus):
    data, vocab = corpus
    fused = small_trainer(data, vocab)
    assert sum(p.numel() for p in fused.model.parameters()) >= SMALL_MODEL
    assert fused.optimizer.defaults["fused"] or not speed._fused_on_cpu()
    reference = small_trainer(data, vocab)
    groups = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in reference.optimizer.param_groups]
    reference.optimizer = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.99), foreach=False)  # torch's plain loop
    assert losses(fused, 6) == pytest.approx(losses(reference, 6), rel=1e-4)
    # Adam divides by sqrt(v): where a gradient is near 0 its last bits decide the step, so the parameters
    # agree to a small part of one update (each moves at most about lr = 1e-3 a step), not to the last bit.
    for a, b in zip(fused.model.parameters(), reference.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_tiny_models_keep_the_bitwise_reference_update():
    torch.manual_seed(0)
    model = GPT(preset("poem-tiny", vocab_size=6))
    assert make_optimizer(model, TrainConfig()).defaults["foreach"] is True  # foreach: the loop's exact result


def test_the_loss_is_read_only_at_log_steps(corpus, monkeypatch):
    data, vocab = corpus
    trainer = small_trainer(data, vocab, steps=6, log_interval=3)
    reads = []
    item = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda t: reads.append(1) or item(t))
    result = trainer.run()
    assert [h["step"] for h in result.history] == [1, 3, 6] and len(reads) == 3
    assert result.loss == pytest.approx(float(losses(small_trainer(data, vocab, steps=6), 6)[-1]), rel=1e-6)


@pytest.mark.skipif(
    os.environ.get("ATTNLAB_TEST_COMPILE") != "1",
    reason="torch.compile takes minutes on a busy CPU; set ATTNLAB_TEST_COMPILE=1 to run it",
)
def test_compiled_model_gives_the_plain_loss(corpus):
    data, vocab = corpus
    plain, compiled = small_trainer(data, vocab), small_trainer(data, vocab, compile=True)
    assert compiled.train_model is not compiled.model
    assert losses(compiled, 3) == pytest.approx(losses(plain, 3), rel=1e-4)


# --- the token cache -------------------------------------------------------------------------------------


def test_token_cache_round_trips_and_is_reused(tmp_path, monkeypatch):
    texts = [TEXT, "whether 'tis nobler"]
    tok = CharTokenizer.train(texts)
    first = token_cache.cached_token_stream(texts, tok, tmp_path)
    (path,) = tmp_path.iterdir()
    assert path.name == token_cache.cache_key(texts, tok) + ".uint16"
    assert path.stat().st_size == 2 * len(first)  # two bytes a token
    assert torch.equal(first, token_stream(texts, tok))

    monkeypatch.setattr(CharTokenizer, "encode", lambda self, text: pytest.fail("tokenized again"))
    again = token_cache.cached_token_stream(texts, tok, tmp_path)
    assert again.dtype == torch.int64 and torch.equal(again, first)


def test_token_cache_key_follows_the_texts_and_the_tokenizer():
    tok = CharTokenizer.train(["abc"])
    key = token_cache.cache_key(["abc"], tok)
    assert key != token_cache.cache_key(["ab", "c"], tok)  # the same characters, split otherwise
    assert key != token_cache.cache_key(["abc"], CharTokenizer.train(["abcd"]))
    assert key == token_cache.cache_key(["abc"], CharTokenizer.train(["abc"]))  # the same tokenizer again


def test_large_corpora_use_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path))
    texts = ["床前明月光" * (token_cache.MIN_CACHED_CHARS // 5)]
    tok = CharTokenizer.train(texts)
    data = TokenData.from_texts(texts, tok, val_fraction=0.1, cache=True)
    assert len(list((tmp_path / "tokens").iterdir())) == 1
    cached = TokenData.from_texts(texts, tok, val_fraction=0.1, cache=True)
    assert torch.equal(cached.train, data.train) and torch.equal(cached.val, data.val)
    TokenData.from_texts(["床前明月光"], tok, cache=True)  # small: no file
    assert len(list((tmp_path / "tokens").iterdir())) == 1


# --- on a GPU --------------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_training_matches_the_cpu_loss(corpus, precision):
    data, vocab = corpus
    gpu = small_trainer(data, vocab, device="cuda", precision=precision)
    assert gpu.train_tokens.is_cuda and gpu.optimizer.defaults["fused"]
    cpu = small_trainer(data, vocab, precision="fp32")
    # TF32 / bf16 matmuls on the GPU against fp32 on the CPU: the same batches, losses within a few percent
    assert losses(gpu, 3) == pytest.approx(losses(cpu, 3), rel=3e-2)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_kv_cache_matches_a_full_forward():
    torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 products: the two paths differ only in order
    torch.manual_seed(0)
    model = GPT(preset("shakespeare-cpu", vocab_size=65)).cuda().eval()
    ids = torch.randint(0, 65, (2, 48), device="cuda")
    with torch.no_grad():
        full = model(ids)  # (B, T, V)
        cache = model.new_kv_cache()
        steps = [model(ids[:, :16], kv_cache=cache)] + [model(ids[:, t : t + 1], kv_cache=cache) for t in range(16, 48)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-3, atol=1e-3)


# --- the command ------------------------------------------------------------------------------------------


def test_cli_precision_and_compile_options_reach_the_checkpoint(tmp_path):
    import json

    from typer.testing import CliRunner

    from attnlab.cli import app

    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "train",
            "--corpus",
            "poem",
            "--steps",
            "3",
            "--precision",
            "bf16",
            "--no-compile",
            "--out",
            str(tmp_path / "ck"),
        ],
    )
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "ck" / "config.json").read_text(encoding="utf-8"))
    assert saved["train"]["precision"] == "bf16" and saved["train"]["compile"] is False
    bad = runner.invoke(app, ["train", "--corpus", "poem", "--precision", "fp8", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--precision must be auto, fp32 or bf16" in bad.output


def test_the_loop_checks_its_token_ids_once_up_front():
    torch.manual_seed(0)
    model = GPT(preset("poem-tiny", vocab_size=6))
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 6\): the corpus has ids from 0 to 9"):
        Trainer(model, TokenData(torch.tensor([0, 1, 2, 9]), None), TrainConfig(steps=1))
