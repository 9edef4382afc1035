"""The vit topic (issue 40, part 3): attnlab.models.ViT against Hugging Face's ViTForImageClassification with copied
weights, its patches against torch's unfold, the class token's attention against softmax(q·kᵀ/√d_k) redone from
the weights, the data split and the shuffled-label null as defined, the claims at the defaults and on their null,
and the --json contract (n_train, accuracy per model)."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from real_support import need
from results import explained, quick_flags, result
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.explain import TOPICS
from attnlab.lessons.vit import runs
from attnlab.models.vit import ViT, ViTConfig, patches

QUICK = TOPICS["vit"].quick


# our block's weights -> their names in Hugging Face's ViT (transformers 4.x, then 5.x)
BLOCK = {
    f"{ours}.{kind}": tuple(f"{name}.{their_kind}" for name in names)
    for ours, names in {
        "ln_1": ("encoder.layer.{i}.layernorm_before", "layers.{i}.layernorm_before"),
        "ln_2": ("encoder.layer.{i}.layernorm_after", "layers.{i}.layernorm_after"),
        "attn.W_Q": ("encoder.layer.{i}.attention.attention.query", "layers.{i}.attention.q_proj"),
        "attn.W_K": ("encoder.layer.{i}.attention.attention.key", "layers.{i}.attention.k_proj"),
        "attn.W_V": ("encoder.layer.{i}.attention.attention.value", "layers.{i}.attention.v_proj"),
        "attn.W_O": ("encoder.layer.{i}.attention.output.dense", "layers.{i}.attention.o_proj"),
        "ffn.W_1": ("encoder.layer.{i}.intermediate.dense", "layers.{i}.mlp.fc1"),
        "ffn.W_2": ("encoder.layer.{i}.output.dense", "layers.{i}.mlp.fc2"),
    }.items()
    for kind, their_kind in (
        (("gamma", "weight"), ("beta", "bias")) if ours.startswith("ln") else (("weight", "weight"), ("bias", "bias"))
    )
}


def hf_twin(config: ViTConfig):
    """Hugging Face's ViT of the same shape, and ours with its weights copied in."""
    need("transformers", "pip install -e '.[test]'")  # a failure under CI=true, which installs it
    import transformers

    hf = transformers.ViTForImageClassification(
        transformers.ViTConfig(
            hidden_size=config.d_model,
            num_hidden_layers=config.n_layers,
            num_attention_heads=config.n_heads,
            intermediate_size=config.hidden,
            hidden_act="gelu",
            image_size=config.image_size,
            patch_size=config.patch_size,
            num_channels=config.channels,
            layer_norm_eps=config.ln_eps,
            qkv_bias=True,
            num_labels=config.n_classes,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    ).eval()
    ours = ViT(config).eval()
    theirs = hf.state_dict()
    with torch.no_grad():
        for p in hf.parameters():  # HF starts the class token at zero and the positions small: make them count
            p.add_(torch.randn_like(p) * 0.1)
        mine = {
            "x_class": theirs["vit.embeddings.cls_token"],
            "E_pos.weight": theirs["vit.embeddings.position_embeddings"][0],
            "W_E.weight": theirs["vit.embeddings.patch_embeddings.projection.weight"].flatten(1),  # (d, C·P·P)
            "W_E.bias": theirs["vit.embeddings.patch_embeddings.projection.bias"],
            "ln_f.gamma": theirs["vit.layernorm.weight"],
            "ln_f.beta": theirs["vit.layernorm.bias"],
            "head.weight": theirs["classifier.weight"],
            "head.bias": theirs["classifier.bias"],
        }
        for i in range(config.n_layers):
            for ours_name, names in BLOCK.items():  # transformers 4 and 5 name the same weights differently
                found = [f"vit.{layer.format(i=i)}" for layer in names if f"vit.{layer.format(i=i)}" in theirs]
                assert len(found) == 1, (ours_name, names)
                mine[f"blocks.{i}.{ours_name}"] = theirs[found[0]]
        ours.load_state_dict(mine, strict=True)
    return hf, ours


@pytest.mark.parametrize(
    "config",
    [runs.VIT, ViTConfig(image_size=8, patch_size=4, channels=3, d_model=24, n_heads=3, d_ff=40, n_layers=2)],
    ids=["lesson", "rgb-4x4-2-layers"],
)
def test_our_vit_is_hugging_faces_with_the_same_weights(config):
    hf, ours = hf_twin(config)
    images = torch.rand(5, config.channels, config.image_size, config.image_size)
    with torch.no_grad():
        want = hf(pixel_values=images).logits
        got = ours(images)
    assert got.shape == (5, config.n_classes)
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)  # float32 sums of ~100 terms, two orders


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.integers(1, 3), st.integers(1, 3))
def test_patches_are_torchs_unfold_with_stride_p(p, channels, batch):
    images = torch.rand(batch, channels, 8, 8)
    want = F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)  # (B, C·P·P, N) -> (B, N, C·P·P)
    assert torch.equal(patches(images, p), want)


def test_the_class_tokens_attention_is_the_softmax_of_its_scores():
    torch.manual_seed(0)
    model = ViT(runs.VIT).eval()
    images = runs.digits().images[:6]
    seen = {}
    model(images, record=lambda name, x: seen.setdefault(name, x))
    attn = model.blocks[0].attn
    h = model.blocks[0].ln_1(seen["tokens"])  # (B, N+1, d): what the one layer's attention reads
    q = attn.W_Q(h)[:, 0].view(6, attn.n_heads, attn.d_k)  # (B, H, d_k): the class token's queries
    k = attn.W_K(h).view(6, -1, attn.n_heads, attn.d_k).transpose(1, 2)  # (B, H, N+1, d_k)
    weights = torch.softmax(torch.einsum("bhd,bhnd->bhn", q, k) / math.sqrt(attn.d_k), dim=-1)  # (B, H, N+1)
    want = weights[:, :, 1:].mean(dim=1)  # the patches' columns, averaged over heads
    got = runs.class_attention(model, images)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    assert (got.sum(-1) < 1).all()  # the rest stays on the class token itself


def test_the_split_holds_out_one_test_set_and_nests_the_training_sets():
    d = runs.digits()
    assert d.images.shape == (1797, 1, 8, 8) and 0 <= d.images.min() and d.images.max() == 1
    test, pool = set(d.test.tolist()), d.pool.tolist()
    assert len(test) == runs.N_TEST and not test & set(pool) and len(test) + len(pool) == 1797
    assert runs.SIZES[-1] == len(pool) and list(runs.SIZES) == sorted(runs.SIZES)
    from sklearn.datasets import load_digits

    raw = load_digits()
    i = int(d.test[3])
    assert torch.equal(d.images[i, 0] * 16, torch.tensor(raw.images[i], dtype=torch.float32))
    assert int(d.labels[i]) == int(raw.target[i])


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(runs.SIZES), st.integers(0, 4))
def test_shuffled_labels_are_the_same_labels_as_often_moved_between_images(n, seed):
    real, null = runs.labels_for(n, seed, False), runs.labels_for(n, seed, True)
    assert torch.equal(real.sort().values, null.sort().values)
    assert (real != null).float().mean() > 0.5  # most images get another digit's label
    assert torch.equal(null, runs.labels_for(n, seed, True))


def test_the_models_are_of_one_size():
    sizes = [runs.n_params(m) for m in runs.MODELS]
    assert max(sizes) / min(sizes) < 1.05  # what they assume differs, not how much they hold


@pytest.mark.slow  # trains
def test_quick_settings_keep_the_contract():
    r = result("vit", "en", **QUICK)
    assert r.n_train == list(runs.SIZES) and set(r.accuracy) == set(runs.MODELS)
    for m in runs.MODELS:
        assert len(r.per_seed[m]) == len(r.n_train) and all(len(v) == QUICK["seeds"] for v in r.per_seed[m])
        assert r.accuracy[m] == pytest.approx([sum(v) / len(v) for v in r.per_seed[m]])
        assert all(0 <= a <= 1 for a in r.accuracy[m])
    p = r.picture
    assert p.label in range(10) and all(d in range(10) for d in p.predicted.values())
    side = runs.VIT.image_size // runs.VIT.patch_size
    assert len(p.attention) == side and all(len(row) == side for row in p.attention)
    assert 0 < sum(map(sum, p.attention)) < 1 and 0 <= p.on_ink <= 1 and 0 < p.ink <= 1


@pytest.mark.slow  # trains
def test_at_the_defaults_the_prior_wins_with_few_images_and_the_null_shows_nothing():
    r = explained("vit", "en")
    status = {c.id: c.status for c in r.claims}
    assert status == {"learns": SHOWN, "prior": SHOWN, "narrows": SHOWN}
    for c in r.claims:  # labels shuffled across the images: no claim holds
        assert c.null["status"] != SHOWN, (c.id, c.null)
    acc = r.accuracy
    assert acc["cnn"][0] - acc["vit"][0] > 0.2  # far from any margin: the ViT's want of a prior
    assert acc["cnn"][-1] > acc["vit"][-1]  # at 1,300 images the curves have not crossed
    assert TOPICS["vit"].answer(r).option == "c"


@pytest.mark.slow  # trains
def test_the_json_carries_n_train_and_accuracy_per_model():
    out = CliRunner().invoke(app, ["explain", "vit", *quick_flags("vit"), "--json", "--lang", "en"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)  # progress goes to stderr
    assert data["n_train"] == list(runs.SIZES)
    assert set(data["accuracy"]) == {"vit", "cnn", "mlp"} and all(len(v) == 4 for v in data["accuracy"].values())
