"""attnlab.train.small.train_small, the lessons' one small-training loop, and the corpus-to-data helpers they share
(attnlab.train.data: char_stream, last_tenth, text_data, poem_or_file)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnlab.lessons.common.weights import redraw
from attnlab.models import GPT, GPTConfig
from attnlab.text import JINGYESI
from attnlab.train.data import char_stream, get_batch, last_tenth, poem_or_file, text_data
from attnlab.train.loop import TrainConfig, make_optimizer
from attnlab.train.small import train_small

TOK, IDS = char_stream(JINGYESI * 4)
CFG = TrainConfig(steps=6, batch_size=4, lr=1e-2, warmup_steps=2, seed=3)


def model() -> GPT:
    return redraw(GPT(GPTConfig(vocab_size=TOK.vocab_size, context_length=8, d_model=16, n_heads=2, n_layers=1)), 0)


def batch(g):
    return get_batch(IDS, 8, CFG.batch_size, g)  # (B, T) each


def test_it_is_the_loop_the_lessons_wrote_by_hand():
    by_hand, helped = model(), model()
    opt, g, losses = make_optimizer(by_hand, CFG), torch.Generator().manual_seed(CFG.seed), []
    for step in range(CFG.steps):
        for group in opt.param_groups:
            group["lr"] = CFG.lr_at(step)
        x, y = batch(g)
        loss = F.cross_entropy(by_hand(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(by_hand.parameters(), CFG.grad_clip)
        opt.step()
        losses.append(loss.item())
    assert train_small(helped, CFG, batch) == losses
    assert all(torch.equal(a, b) for a, b in zip(by_hand.parameters(), helped.parameters()))


def test_on_step_runs_before_each_update_and_after_the_last():
    seen: list[tuple[int, float]] = []
    m = model()
    first = m.embed.tok.weight
    losses = train_small(m, CFG, batch, on_step=lambda step: seen.append((step, float(first.detach().sum()))))
    assert [s for s, _ in seen] == list(range(CFG.steps + 1)) and len(losses) == CFG.steps
    assert seen[0][1] != seen[1][1]  # on_step(1) sees the weights after the first update
    seen.clear()
    assert train_small(model(), CFG, batch, steps=0, on_step=lambda step: seen.append((step, 0.0))) == []
    assert seen == [(0, 0.0)]  # no update: only the report that it is done


def test_the_penalty_moves_the_gradient_not_the_reported_loss():
    plain = train_small(model(), CFG, batch, steps=2)
    heavy = train_small(model(), CFG, batch, steps=2, penalty=lambda m: 10 * m.embed.tok.weight.pow(2).sum())
    assert heavy[0] == plain[0] and heavy[1] != plain[1]  # the same first batch and loss; then other weights
    assert train_small(model(), CFG, batch, steps=2, penalty=lambda m: None) == plain


def test_the_last_tenth_is_held_out_and_never_less_than_asked():
    ids = torch.arange(95)
    train, val = last_tenth(ids)
    assert len(val) == 9 and torch.equal(torch.cat([train, val]), ids)
    assert len(last_tenth(ids, least=20)[1]) == 20
    assert TOK.decode(IDS[:-1].tolist()) == JINGYESI * 4 and int(IDS[-1]) == TOK.eot_id  # the end mark last


def test_a_built_in_poem_is_whole_and_a_file_holds_out_its_last_tenth(tmp_path):
    poem = text_data("jingyesi", 100)
    assert not poem.held_out and poem.train is poem.val and len(poem.train) == len(JINGYESI) + 1
    path = tmp_path / "t.txt"
    path.write_text("abcdefghij" * 30, encoding="utf-8")
    cut = text_data(str(path), 200, least=25)  # 200 characters and the end mark: 201 ids, 25 held out
    assert cut.held_out and (len(cut.train), len(cut.val)) == (176, 25) and cut.vocab_size == cut.tokenizer.vocab_size
    assert poem_or_file("", 10) == ("静夜思", JINGYESI) and poem_or_file(str(path), 5) == ("t.txt", "abcde")
