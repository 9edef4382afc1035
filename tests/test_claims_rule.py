"""The rule: a claim is a comparison that can fail, and the numbers it prints support its status.

Generic over the registry: every topic in attnlab.lessons.explain.TOPICS is run
  * at its defaults, with seeds 0-9 (when it has a `seed` parameter), and with each parameter at each edge of its
    form (min and max of a range, every choice, both booleans, the empty and the longest text), and
  * at settings drawn at random from the form (hypothesis, a fixed small budget per topic),
and every claim it prints must
  * carry the contract: id, text, status in shown | not_shown | contradicted, holds == (status == "shown"),
    a control in words, a baseline and a margin (numbers), a direction, and the values its sentence uses;
  * have the status its own numbers give: `status_of(direction, measured, baseline, margin)` redone from the
    claim's data (a lead needs a positive margin, so a tie is never shown);
  * never be contradicted, except where the course is wrong at some settings (COURSE_DISAGREES, each with its
    reason) or in a deliberate "break it" setting (BREAK_IT, where the claim must be contradicted).
At the defaults every claim is shown, except those listed in DEFAULTS_NOT_SHOWN with the reason. That each claim
fails on its null (the effect absent by construction) is tested per lesson in tests/test_claims_null_*.py.

Time: each lesson's QUICK (beside its PARAMS) holds the test-sized values of the parameters that cost time; they
stand while another parameter is at its edge, and the random settings draw from the same test-sized ranges for
those. A QUICK parameter's own largest value is checked for acceptance and cost (refused, or estimated and bounded
by what the lab's budget admits) without training the largest model for its longest run. Every result comes
from the suite's shared store (tests/results.py): the defaults and QUICK runs other tests read are computed once.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results import by_topic, result

from attnlab.lessons.common.claims import DIRECTIONS, STATUSES, status_of
from attnlab.lessons.common.params import Param, ParamError
from attnlab.lessons.explain import TOPICS, get_topic

# Settings whose purpose is to break an invariant: there the lesson must print the claim as contradicted.
BREAK_IT = {("position-wise", "bug", True)}

# Claims the course states more broadly than measurement supports: at some settings the numbers go the other way,
# and the lesson says "contradicted" with both numbers. The reason is the lab's finding, shown on the page.
COURSE_DISAGREES = {
    ("sqrt-dk", "gradient_fades"): "with many keys the scaled softmax is near uniform and passes less gradient",
    ("rnn-gradients", "lstm_keeps"): "with forget gates far from 1 (forget_bias <= 1) the LSTM's cell path fades "
    "faster than the tanh RNN's gradient: the gates keep it only near 1",
    ("moe", "moe_beats_active"): "with few steps or a tight capacity (tokens dropped) the routed model learns slower "
    "than its dense twin of equal active size: the loss goes the other way",
    ("moe", "total_beats_moe"): "in as many steps the dense model of equal total size can learn slower than the MoE, "
    "whose experts each see fewer tokens but update fewer weights a token",
    ("patching", "corruption_matters"): "where the changed character does not decide the answer (no target: a barely "
    "trained model's top after 床前明月 is ，, which 床望明月 makes likelier; 低头思故 → 举头思故, where 思故 gives 乡) "
    "the model of the text is moved by it less than its shuffled twin, whose answers swing with any character: "
    "that character does not carry the answer, and the lesson says so",
    ("vit", "narrows"): "with a few dozen steps the CNN already learns more from more images while the ViT has "
    "learnt nothing at any size: the CNN's lead grows with data instead. A ViT needs more training as well as more "
    "images; the lesson says so with both gaps",
    ("seq2seq", "encoder_decoder_leads"): "on the reversed digits the decoder-only GPT of equal size translates "
    "better than the encoder-decoder after 400 steps (0.89 against 0.67 exact, averaged over the trained lengths): the "
    "course's 'an encoder-decoder shines where output differs from input' does not hold at this size, and the page "
    "says so",
}

# Claims not shown at a topic's defaults, with the reason the page gives.
DEFAULTS_NOT_SHOWN: dict[tuple[str, str], str] = {
    ("seq2seq", "encoder_decoder_leads"): "on the digits in order the two Transformers of equal size tie (0.99 "
    "against 0.94 exact over the trained lengths, margin 0.2): a decoder alone does this seq2seq as well",
    ("moe", "moe_beats_active"): "the built-in poem is learnt by heart by every model: the losses tie within the "
    "margin (benchmarks/bench_moe.py compares them on a real corpus)",
    ("moe", "total_beats_moe"): "the same tie: on 24 characters no model has anything left to gain from size",
    ("moe", "dead_without"): "4 experts over 24 characters keep every expert busy without the balancing loss; "
    "with 8 experts and 300 steps they die (the page's hint)",
    ("ffn-memory", "keys_share_next"): "静夜思 has 24 positions, almost no two followed by the same character: K = 10 "
    "contexts cannot share a next token (shown on Tiny Shakespeare, the page's hint)",
    ("word2vec", "agrees_with_gpt"): "on 静夜思's 17 characters a GPT trained 200 steps agrees with word2vec beyond "
    "the untrained GPT by less than three random-table spreads (seed 0: 0.178 < "
    "0.26); on 唐诗三百首 it clears the bar (README)",
    ("mlm", "shortcut"): "the next-character GPT and the fill-the-blank GPT tie within noise; at seed 0 the lead sits "
    "at its margin of two standard errors (about 2 on one CPU, 1.5 on another): not a default "
    "any test may rest on",
    (
        "patching",
        "token_attention_tracks",
    ): "the last layer's attention ranks 静夜思's characters by importance no better "
    "than whole windows paired with other windows (ρ 0.13 < 0.31 over 36 pairs): the lesson's point; "
    "rollout does (ρ 0.46)",
    ("patching", "few_heads"): "the twin trained on the characters shuffled has one head that matters most as "
    "often as the model of the text (3 of 8 seeds): ablation finds a needed head in either",
    ("tools", "longer"): "operands longer than any trained on are miscopied into the call (none copied right at 4 "
    "digits), so the tool cannot help: the lesson's second finding, asked as a question, not a flaw",
    ("agent", "longer"): "trained on chains of one and two steps, the agent reads a three-step task as a two-step one "
    "(two calls in 188 of 200, built from the wrong parts of the question; none solved): the lesson's second finding",
}

SEEDS = range(10)


def edges(p: Param) -> list:
    if p.kind == "int":
        return [int(p.lo), int(p.hi)]
    if p.kind == "float":
        return [p.lo, p.hi]
    if p.kind == "choice":
        return list(p.choices)
    if p.kind == "bool":
        return [False, True]
    return ["", "x" * (p.max_len or 1)]  # str: the empty text and the longest the form takes


def base(topic: str) -> dict:
    return get_topic(topic).quick


def costly_top(topic: str, p: Param, value) -> bool:
    """The largest value of a parameter the lesson's QUICK shrinks: checked for its cost, not trained."""
    return p.name in get_topic(topic).quick and p.kind in ("int", "float") and value == edges(p)[-1]


def edge_cases(costly: bool = False):
    for name, topic in TOPICS.items():
        for p in topic.params:
            for value in edges(p):
                if costly_top(name, p, value) == costly:
                    slow = topic.heavy and not costly  # a costly top value is checked, not run
                    yield pytest.param(
                        name,
                        p.name,
                        value,
                        id=f"{name}-{p.name}={value!r:.20}",
                        marks=[pytest.mark.slow] if slow else [],
                    )


def seed_cases():
    for name, topic in TOPICS.items():
        if any(p.name == "seed" for p in topic.params):
            for seed in SEEDS:
                yield pytest.param(
                    name, seed, id=f"{name}-seed={seed}", marks=[pytest.mark.slow] if topic.heavy else []
                )


def claims_of(topic: str, settings: dict, lang: str = "en") -> list:
    try:
        done = result(topic, lang, **settings)
    except ParamError:
        return []  # refused with a readable message: nothing was claimed
    return list(getattr(done, "claims", []))


def contract_problems(topic: str, claims: list) -> list[str]:
    """What is wrong with each claim's data: a missing field, or a status its own numbers do not give."""
    bad = []
    for c in claims:
        where = f"{topic}.{c.id}"
        if c.status not in STATUSES or c.direction not in DIRECTIONS:
            bad.append(f"{where}: status {c.status!r}, direction {c.direction!r}")
            continue
        if c.holds is not (c.status == "shown"):
            bad.append(f"{where}: holds={c.holds} but status={c.status}")
        if not c.control.strip() or not c.text.strip() or not c.versus.strip():
            bad.append(f"{where}: no control, text or comparison in words")
        if not isinstance(c.values, dict) or not c.values:
            bad.append(f"{where}: no values")
        numbers = (c.measured, c.baseline, c.margin)
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers):
            bad.append(f"{where}: measured/baseline/margin {numbers}")
            continue
        if c.direction != "within" and not c.margin > 0:
            bad.append(f"{where}: a lead with margin {c.margin}: a tie would be a verdict")
        redone = status_of(c.direction, c.measured, c.baseline, c.margin)
        if redone != c.status:
            bad.append(
                f"{where}: prints {c.status} but its numbers give {redone} "
                f"(measured {c.measured}, baseline {c.baseline}, margin {c.margin}, {c.direction})"
            )
    return bad


def contradicted(topic: str, claims: list) -> list[str]:
    return [
        f"{c.id}: {c.text} [{c.versus}]"
        for c in claims
        if c.status == "contradicted" and (topic, c.id) not in COURSE_DISAGREES
    ]


def test_every_topic_is_covered():
    covered = {case.values[0] for case in edge_cases()} | {case.values[0] for case in seed_cases()}
    covered |= {case.values[0] for case in edge_cases(costly=True)}
    no_params = {name for name, topic in TOPICS.items() if not topic.params}
    assert covered | no_params == set(TOPICS)


@pytest.mark.parametrize("topic", by_topic())
def test_defaults_show_what_the_course_says(topic):
    claims = claims_of(topic, {})
    assert contract_problems(topic, claims) == []
    unexpected = [
        f"{c.id} is {c.status}: {c.text} [{c.versus}]"
        for c in claims
        if c.status != "shown" and (topic, c.id) not in DEFAULTS_NOT_SHOWN
    ]
    assert unexpected == []
    for lang in ("zh", "en"):  # the same statuses in both languages
        assert [(c.id, c.status) for c in claims_of(topic, {}, lang)] == [(c.id, c.status) for c in claims]


@pytest.mark.parametrize("topic,seed", list(seed_cases()))
def test_seeds_0_to_9_print_no_contradiction_and_honest_statuses(topic, seed):
    claims = claims_of(topic, {**base(topic), "seed": seed})
    assert contract_problems(topic, claims) == []
    assert contradicted(topic, claims) == []


@pytest.mark.parametrize("topic,name,value", list(edge_cases()))
def test_the_edges_of_the_form(topic, name, value):
    settings_ = {**base(topic), name: value}
    claims = claims_of(topic, settings_)
    assert contract_problems(topic, claims) == []
    bad = contradicted(topic, claims)
    if (topic, name, value) in BREAK_IT:
        assert bad, f"{topic} with {name}={value!r} is meant to break an invariant, and its claims should say so"
    else:
        assert bad == [], f"{topic} with {settings_}"


@pytest.mark.parametrize("topic,name,value", list(edge_cases(costly=True)))
def test_the_costly_edges_are_refused_or_bounded(topic, name, value):
    """At a time-costly parameter's largest value (the others at QUICK): the form takes it, and the lesson either
    refuses it in one readable line or says, before allocating, what it will cost, within the lab's budget."""
    tp = get_topic(topic)
    p = {q.name: q for q in tp.params}[name]
    assert p.parse(value) == value
    try:
        cost = tp.cost(**{**base(topic), name: value})
    except ParamError as err:
        assert str(err).strip() and "\n" not in str(err).strip() and err.name in (None, *{q.name for q in tp.params})
        return
    assert math.isfinite(cost.mb) and cost.mb >= 0, (topic, name, value, cost)
    if tp.cost(**base(topic)).trains:
        assert cost.trains, f"{topic}: {name}={value} trains, and its cost should say so"
    from attnlab.web import budget

    try:  # the web's lane for it, or its refusal in words (a request is never admitted unbounded)
        assert budget.lane_for(cost) in (budget.HEAVY, budget.LIGHT)
    except budget.TooLarge as err:
        assert str(err).strip()


@pytest.mark.parametrize("topic,name,value", sorted(BREAK_IT))
def test_break_it_settings_are_real_parameters(topic, name, value):
    params = {p.name: p for p in get_topic(topic).params}
    assert name in params and params[name].parse(value) == value


@pytest.mark.slow  # runs every listed topic, several of them training
def test_listed_exceptions_are_real_claims():
    for topic, claim_id in {*COURSE_DISAGREES, *DEFAULTS_NOT_SHOWN}:
        assert claim_id in {c.id for c in claims_of(topic, base(topic))}, (topic, claim_id)


# Random valid settings: one strategy per parameter, drawn inside the form's range, with the costly parameters
# held within their test-sized values (a drawn value never exceeds it).
def strategy(topic: str, p: Param):
    sized = get_topic(topic).quick.get(p.name)
    if p.kind == "int":
        hi = int(p.hi) if sized is None else max(int(p.lo), min(int(p.hi), int(sized)))
        return st.integers(int(p.lo), hi)
    if p.kind == "float":
        return st.floats(p.lo, p.hi, allow_nan=False, allow_infinity=False)
    if p.kind == "choice":
        return st.sampled_from(list(p.choices))
    if p.kind == "bool":
        return st.booleans()
    if p.cli_only:
        return st.just(p.default)  # a file path: the form does not draw one
    return st.text(alphabet="猫追老鼠它床前明月光 abcxyz", max_size=min(p.max_len or 8, 16))


def topic_settings(topic: str):
    params = [p for p in get_topic(topic).params if not p.cli_only]
    return st.fixed_dictionaries({p.name: strategy(topic, p) for p in params})


@pytest.mark.parametrize("topic", by_topic([name for name, tp in TOPICS.items() if tp.params]))
def test_random_settings_print_statuses_their_numbers_support(topic):
    @settings(max_examples=3, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(topic_settings(topic))
    def check(drawn):
        claims = claims_of(topic, drawn)
        assert contract_problems(topic, claims) == [], drawn
        breaking = [(topic, k, v) for k, v in drawn.items() if (topic, k, v) in BREAK_IT]
        if not breaking:
            assert contradicted(topic, claims) == [], drawn

    check()
