"""Every claim that is not an identity declares its strongest null (lessons/common/nulls.py) as settings of its
own lesson, the views run it, and at the lesson's defaults the null does not show the claim: a claim beats its
null, or it is not shown. The nulls are read from the suite's store, so a topic's defaults and its nulls are
computed once for these tests, the export and the pages."""

from __future__ import annotations

import pytest
from results import by_topic, explained

from attnlab.lessons.common.claims import SHOWN
from attnlab.lessons.common.nulls import Null, is_identity
from attnlab.lessons.explain import TOPICS, get_topic


@pytest.mark.parametrize("topic", by_topic())
def test_every_claim_beats_its_declared_null_at_the_defaults(topic):
    lesson = get_topic(topic)
    declared = lesson.nulls
    r = explained(topic, "en")
    claims = list(getattr(r, "claims", []))
    undeclared = [c.id for c in claims if not is_identity(c) and c.id not in declared]
    assert not undeclared, f"{topic}: claims with no declared null (NULLS in its lesson.py): {undeclared}"
    for c in claims:
        if is_identity(c):
            continue
        null = declared[c.id]
        assert c.null is not None and c.null["name"] == null.name, (topic, c.id)
        assert c.null["line"], (topic, c.id)
        assert c.null["status"] != SHOWN, f"{topic}.{c.id} is shown on its null too: {c.null['line']}"
        if null.name == "chance":  # chance is a count's null: only a count against chance may carry it
            assert {"k", "n", "chance"} <= set(c.values), (topic, c.id)


def test_declared_nulls_name_real_parameters():
    for name, topic in TOPICS.items():
        params = {p.name: p for p in topic.params}
        for claim_id, null in topic.nulls.items():
            assert isinstance(null, Null), (name, claim_id)
            for key, value in null.settings.items():
                assert key in params, f"{name}: the null of {claim_id} sets {key!r}, not one of its parameters"
                assert params[key].parse(value) == value, (name, claim_id, key)


def test_a_claim_its_null_shows_is_not_shown():
    """The rule itself, on a run where the null is made to show the claim (sqrt-dk's saturation at d_k = 1
    checked against d_k = 512): the claim is downgraded and its line says why."""
    from attnlab.lessons.common import nulls

    lesson = get_topic("sqrt-dk")
    plain = explained("sqrt-dk", "en", **lesson.quick)
    strong = explained("sqrt-dk", "en", **{**lesson.quick, "d_k": 512})
    (sat,) = [c for c in plain.claims if c.id == "saturation"]
    (twin,) = [c for c in strong.claims if c.id == "saturation"]
    assert sat.status == SHOWN and twin.status == SHOWN
    declared = {"saturation": Null("shuffled", d_k=512)}  # any name with words
    given = lesson.given(lesson.quick)
    (out,) = nulls.attach("sqrt_dk", declared, [sat], {nulls.key_of({"d_k": 512}): {"saturation": twin}}, given, "en")
    assert out.status != SHOWN and not out.holds
    assert out.null["status"] == SHOWN and "shows it too" in out.versus


def test_a_run_at_its_own_null_shows_no_claim_that_null_declares():
    """A learner who chooses the null itself (shuffle on): a claim shown there is what the null shows, so it is
    not shown, and its line says this run is that control (bench_claims found ffn-memory's values_match_keys
    printed ✓ on a shuffled run)."""
    from attnlab.lessons.common import nulls

    lesson = get_topic("sqrt-dk")
    plain = explained("sqrt-dk", "en", **lesson.quick)
    (sat,) = [c for c in plain.claims if c.id == "saturation"]
    assert sat.status == SHOWN
    declared = {"saturation": Null("shuffled", d_k=lesson.given(lesson.quick)["d_k"])}  # any name with words
    (out,) = nulls.attach("sqrt_dk", declared, [sat], {}, lesson.given(lesson.quick), "en")
    assert out.status != SHOWN and not out.holds and "shows it too" in out.versus
    assert out.null["status"] == SHOWN and "control itself" in out.null["line"]
