"""The toy lab's lesson functions against independent computations: numpy float64, exact Fractions,
torch's own FLOP counter, and properties over random inputs."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.i18n import t
from attnlab.lessons.common.bad_input import BadInput
from attnlab.lessons.ledger.lesson import shape_ledger
from attnlab.lessons.toy.hand_calc import hand_calc, mix, parse_number, parse_score
from attnlab.lessons.toy.lesson import HEADS, QUESTIONS, TOKENS, X_TOY, check_prediction, parse_query, toy_lab
from attnlab.lessons.toy.soft_lookup import soft_lookup, weights_vs_contributions

QUERIES = list(TOKENS)


def numpy_head(W_Q, W_K, W_V, causal: bool):
    """The whole head in numpy, straight from the definition, with no attnlab code."""
    X = np.array(X_TOY, dtype=np.float64)
    Q, K, V = X @ np.array(W_Q, float), X @ np.array(W_K, float), X @ np.array(W_V, float)
    S = Q @ K.T / np.sqrt(Q.shape[1])
    allowed = np.tril(np.ones((4, 4), bool)) if causal else np.ones((4, 4), bool)
    E = np.where(allowed, np.exp(S - S.max(axis=1, keepdims=True)), 0.0)
    A = E / E.sum(axis=1, keepdims=True)
    return {"Q": Q, "K": K, "V": V, "dots": Q @ K.T, "scores": S, "weights": A, "output": A @ V, "allowed": allowed}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("query", QUERIES)
def test_every_matrix_equals_numpy(query, causal):
    lab = toy_lab(query, causal=causal)
    assert lab.X == [list(map(float, r)) for r in X_TOY]
    outputs = []
    for head, spec in zip(lab.heads, HEADS):
        ref = numpy_head(spec["W_Q"], spec["W_K"], spec["W_V"], causal)
        assert head.W_Q == [list(map(float, r)) for r in spec["W_Q"]]
        for name in ("Q", "K", "V", "dots", "scores", "weights", "output"):
            np.testing.assert_allclose(getattr(head, name), ref[name], rtol=0, atol=1e-12, err_msg=name)
        masked = np.array([[np.nan if x is None else x for x in row] for row in head.masked_scores])
        np.testing.assert_array_equal(np.isnan(masked), ~ref["allowed"])
        np.testing.assert_allclose(masked[ref["allowed"]], ref["scores"][ref["allowed"]], atol=1e-12)
        i = lab.query_index
        np.testing.assert_allclose(head.row.weights, ref["weights"][i], atol=1e-12)
        np.testing.assert_allclose(head.row.output, ref["output"][i], atol=1e-12)
        terms = ref["weights"][i][:, None] * ref["V"]
        np.testing.assert_allclose(head.row.contributions, terms, atol=1e-12)
        np.testing.assert_allclose(head.row.contribution_norms, np.linalg.norm(terms, axis=1), atol=1e-12)
        np.testing.assert_allclose(np.sum(head.row.contributions, axis=0), head.row.output, atol=1e-12)
        outputs.append(ref["output"])
    np.testing.assert_allclose(lab.concat, np.concatenate(outputs, axis=1), atol=1e-12)
    np.testing.assert_allclose(lab.concat_row, np.concatenate(outputs, axis=1)[lab.query_index], atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_rows_sum_to_one(causal):
    for head in toy_lab(causal=causal).heads:
        for row in head.weights:
            assert math.isclose(sum(row), 1.0, abs_tol=1e-12)
            assert all(w >= 0 for w in row)


def test_causal_mask_zeros_the_future_exactly():
    lab = toy_lab(3, causal=True)
    for head in lab.heads:
        for i in range(4):
            for j in range(4):
                if j > i:
                    assert head.weights[i][j] == 0.0 and head.masked_scores[i][j] is None
                else:
                    assert head.weights[i][j] > 0.0
        assert head.weights[0] == [1.0, 0.0, 0.0, 0.0]  # position 1 reads one key: itself
        assert head.weights[2][3] == 0.0  # position 3 cannot read position 4
    assert lab.mask == [[j <= i for j in range(4)] for i in range(4)]


def test_without_a_mask_position_one_reads_all_four_keys():
    for head in toy_lab(1).heads:
        assert all(w > 0.1 for w in head.row.weights)


def test_the_two_heads_disagree_on_where_it_looks():
    h1, h2 = toy_lab("它").heads
    assert TOKENS[h1.row.top[0]] == "猫" and h1.row.weights[0] > 0.8
    assert TOKENS[h2.row.top[0]] == "追" and h2.row.weights[1] > 0.8
    assert max(abs(a - b) for a, b in zip(h1.row.weights, h2.row.weights)) > 0.7


def test_ties_are_reported_as_ties():
    h2 = toy_lab("老鼠").heads[1]  # every q.k is 0 in that row: uniform weights
    assert h2.row.top == [0, 1, 2, 3] and h2.row.weights == [0.25] * 4


def test_parse_query():
    assert [parse_query(q) for q in ("猫", "追", "老鼠", "它", "1", " 4 ", 2)] == [0, 1, 2, 3, 0, 3, 1]
    for bad in ("狗", "0", "5", "", "-1", "1.5", 7):
        with pytest.raises(ValueError, match="query must be one of 猫, 追, 老鼠, 它 or a position 1..4, got"):
            parse_query(bad)


def test_predictions_are_settled_by_the_lab():
    for q in QUESTIONS:
        assert check_prediction(q.id, q.answer).correct
        wrong = next(o for o in q.options if o != q.answer)
        assert not check_prediction(q.id, wrong).correct
    assert check_prediction("keys", "4").evidence["nonzero"] == 4
    assert check_prediction("future", "no").evidence["weight_head1"] == 0.0
    assert check_prediction("heads", "no").evidence["head1_top"] == "猫"
    with pytest.raises(ValueError, match="question must be one of keys, future, heads, got 'x'"):
        check_prediction("x", "1")
    with pytest.raises(ValueError, match="must be one of 1, 2, 3, 4, got '9'"):
        check_prediction("keys", "9")


# ---- the hand calculation ------------------------------------------------------------------------


def test_textbook_hand_calculation_is_exact():
    hc = hand_calc()
    assert hc.now.exact.exp_scores == ["1", "3"]
    assert hc.now.exact.weights == ["1/4", "3/4"]
    assert hc.now.exact.output == ["1/2", "3/2"]
    assert hc.now.weights == pytest.approx([0.25, 0.75], abs=1e-15)
    assert hc.now.output == pytest.approx([0.5, 1.5], abs=1e-15)
    assert hc.delta_output == [0.0, 0.0]


def test_changing_v2_moves_the_output_by_a2_delta_v2():
    hc = hand_calc(["0", "ln 3"], [[2, 0], [0, 4]])
    assert hc.now.exact.weights == ["1/4", "3/4"]  # the scores did not change, so neither did the weights
    assert hc.now.exact.output == ["1/2", "3"]
    assert hc.exact_delta_output == ["0", "3/2"]
    assert hc.exact_delta_terms == [["0", "0"], ["0", "3/2"]]  # a_2 * (0, 2)
    assert hc.delta_output == pytest.approx([0.0, 1.5]) and hc.predicted_delta == pytest.approx([0.0, 1.5])


def test_scores_that_are_not_logs_of_rationals_give_floats_only():
    hc = hand_calc(["1", "2"], [["2", "0"], ["0", "2"]])
    assert hc.now.exact is None and hc.exact_delta_output is None
    e = np.exp([1.0, 2.0])
    assert hc.now.weights == pytest.approx(list(e / e.sum()), abs=1e-15)


def test_parse_score_and_number():
    assert parse_score("ln 3") == (math.log(3), Fraction(3))
    assert parse_score("-ln 2")[1] == Fraction(1, 2)
    assert parse_score("ln(3/2)")[1] == Fraction(3, 2)
    assert parse_score("−ln 4")[1] == Fraction(1, 4)  # a typographic minus, as the page prints it
    assert parse_score(0) == (0.0, Fraction(1))
    assert parse_score("1.5") == (1.5, None)
    assert parse_number("3/4") == Fraction(3, 4) and parse_number(0.1) == Fraction(1, 10)
    for bad in ("abc", "ln 0", "ln -2", "inf", "nan", float("inf"), float("nan"), "", None, True, "1e9"):
        with pytest.raises(ValueError, match="got"):
            parse_score(bad)


HUGE = ("1e-5000", "1e-30000000", "1e999999999", "9" * 5000, "1E-3_000_000", "ln " + "7" * 5000)


@pytest.mark.parametrize("text", HUGE)
def test_huge_number_strings_are_refused_by_their_look(text):
    """Fraction('1e-30000000') builds a 30-million-digit integer and held the server for 91 s; such strings are
    refused before any arithmetic, with a message naming the box and the limit, in both languages."""
    for parse in (parse_number, parse_score):
        if parse is parse_number and text.startswith("ln"):
            continue
        with pytest.raises(BadInput) as caught:
            parse(text, "v2y")
        err = caught.value
        assert err.key in ("toy.err.exponent", "toy.err.too_long") and err.field == "v2y"
        assert str(err).startswith("v2y ") and ("300" in str(err) or "40" in str(err)) and len(str(err)) < 200
        assert str(err) == t(err.key, "en", **err.fields) and err.text("zh") == t(err.key, "zh", **err.fields)
    with pytest.raises(BadInput, match="exponent|too long"):
        hand_calc(["0", "ln 3"], [[2, 0], [0, text]])


def test_exact_results_stop_at_readable_sizes():
    """1e-300 is a fine number, but its exact weights would be 300-digit fractions: floats only, and the floats
    still equal numpy."""
    small = "1e-300"
    assert parse_number(small) == Fraction(1, 10**300)
    m = mix(["0", "ln 3"], [[2, 0], [0, small]])
    assert m.exact is None
    np.testing.assert_allclose(m.output, [0.5, 0.75e-300], rtol=1e-12)
    h = hand_calc(["0", "ln 3"], [[2, 0], [0, small]])
    assert h.now.exact is None and h.exact_delta_output is None and h.before.exact is not None
    big = mix(["0", f"ln {10**16}"], [[1], [0]])  # e^s itself past 10^15
    assert big.exact is None and big.weights[0] == pytest.approx(1 / (1 + 10**16))
    # o = 1/4 + (3/4) x: with x = 10^-14 the denominator is 4 * 10^14 (kept), with x = 10^-15 it is 4 * 10^15
    assert mix(["0", "ln 3"], [[1], [f"1/{10**14}"]]).exact.output == [f"{10**14 + 3}/{4 * 10**14}"]
    assert mix(["0", "ln 3"], [[1], [f"1/{10**15}"]]).exact is None


def test_lesson_refusals_carry_a_catalog_key():
    """Every refusal a page shows has the same sentence in both languages (the page picks one)."""
    cases = [
        lambda: parse_query("zz"),
        lambda: check_prediction("nope", "1"),
        lambda: check_prediction("keys", "9"),
        lambda: soft_lookup("它", 9),
        lambda: shape_ledger(-5, 4, 2),
        lambda: shape_ledger(4, 4, 3),
        lambda: shape_ledger("9" * 5000, 4, 2),
        lambda: mix([], []),
        lambda: hand_calc([0], [[1, 2]]),
        lambda: parse_score("ln -2"),
        lambda: parse_number("1e9"),
    ]
    for case in cases:
        with pytest.raises(BadInput) as caught:
            case()
        err = caught.value
        assert str(err) == err.text("en") and err.text("zh") != err.text("en") and len(str(err)) < 200


def test_mix_rejects_bad_shapes_with_readable_messages():
    with pytest.raises(ValueError, match=r"values must hold one vector per score \(2\), got 3"):
        mix([0, 1], [[1], [2], [3]])
    with pytest.raises(ValueError, match="scores must hold 1..16 numbers, got 0"):
        mix([], [])
    with pytest.raises(ValueError, match=r"share one length 1..8, got lengths \[2, 1\]"):
        mix([0, 1], [[1, 2], [3]])
    with pytest.raises(ValueError, match="2 scores and 2 two-dim values"):
        hand_calc(["0"], [[1, 2]])


finite = st.floats(min_value=-30, max_value=30, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.lists(finite, min_size=n, max_size=n),
            st.lists(st.lists(finite, min_size=2, max_size=2), min_size=n, max_size=n),
        )
    )
)
def test_mix_equals_numpy_softmax(case):
    scores, values = case
    m = mix(scores, values)
    s = np.array(scores)
    a = np.exp(s - s.max())
    a /= a.sum()
    np.testing.assert_allclose(m.weights, a, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(m.output, a @ np.array(values), rtol=1e-10, atol=1e-12)


rational = st.fractions(min_value=Fraction(-20), max_value=Fraction(20), max_denominator=12)
positive = st.fractions(min_value=Fraction(1, 12), max_value=Fraction(12), max_denominator=12)


@settings(max_examples=60, deadline=None)
@given(st.tuples(positive, positive), st.lists(st.tuples(rational, rational), min_size=2, max_size=2))
def test_exact_fractions_agree_with_floats_and_delta_rule(exps, values):
    scores = [f"ln({e.numerator}/{e.denominator})" for e in exps]
    vals = [[f"{x.numerator}/{x.denominator}" for x in v] for v in values]
    hc = hand_calc(scores, vals)
    a = [e / sum(exps) for e in exps]  # the softmax of ln(e_j), in exact arithmetic written here
    assert [Fraction(w) for w in hc.now.exact.weights] == a
    o = [a[0] * values[0][c] + a[1] * values[1][c] for c in range(2)]
    assert [Fraction(x) for x in hc.now.exact.output] == o
    np.testing.assert_allclose(hc.now.output, [float(x) for x in o], rtol=1e-12, atol=1e-12)
    textbook = [[Fraction(2), Fraction(0)], [Fraction(0), Fraction(2)]]
    d = [sum(a[j] * (values[j][c] - textbook[j][c]) for j in range(2)) for c in range(2)]
    assert [Fraction(x) for x in hc.exact_delta_output] == d  # delta_o = sum_j a_j delta_v_j, exactly


# ---- soft lookup and weights vs contributions ---------------------------------------------------


@pytest.mark.parametrize("head", [1, 2])
@pytest.mark.parametrize("query", QUERIES)
def test_soft_and_hard_lookup(query, head):
    look = soft_lookup(query, head)
    row = toy_lab(query).heads[head - 1].row
    assert look.soft_weights == row.weights and look.soft_output == row.output
    best = int(np.argmax(look.scores))
    assert look.hard_index == best and look.hard_weights == [1.0 if j == best else 0.0 for j in range(4)]
    assert look.hard_output == look.values[best]
    q, K = np.array(look.q), np.array(look.keys)
    np.testing.assert_allclose(look.scores, K @ q / np.sqrt(2), atol=1e-12)
    with pytest.raises(ValueError, match="head must be 1..2, got 3"):
        soft_lookup(query, 3)


def test_weights_are_not_importance():
    w = weights_vs_contributions()
    assert w.value_norms == pytest.approx([0.01, 100, 100])
    assert w.contribution_norms == pytest.approx([0.009, 5, 5])
    assert w.top_weight == 0 and w.top_contribution in (1, 2)
    assert sum(w.contribution_shares) == pytest.approx(1)
    assert w.output == pytest.approx([0.009, 8.0])
    with pytest.raises(ValueError, match="sum to 1"):
        weights_vs_contributions((0.5, 0.6), ((1, 0), (0, 1)))


# ---- the shape ledger ---------------------------------------------------------------------------


def test_ledger_shapes_for_the_toy():
    led = shape_ledger(4, 4, 2)
    shapes = {r.name: r.shape for r in led.rows}
    assert shapes["Q"] == [4, 2] and shapes["K, V"] == [4, 2] and shapes["W_Q, W_K, W_V"] == [4, 2]
    assert shapes["S = QK^T / sqrt(d_k)"] == [4, 4] and shapes["A = softmax(S)"] == [4, 4]
    assert shapes["concat(O_1..O_h)"] == [4, 4] and shapes["FFN W_1"] == [4, 16]
    assert shapes["FFN W_2"] == [16, 4]  # W_2 maps the 4d hidden units back to d
    assert (led.train_sequential_steps, led.generate_sequential_steps) == (1, 4)


@pytest.mark.parametrize("n,d,h", [(4, 4, 2), (7, 12, 3), (30, 8, 4)])
def test_ledger_cost_equals_torch_flop_count(n, d, h):
    """Run one layer's matrix products with these shapes and let torch count the FLOPs (2 per multiply-add)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    d_k = d // h
    x = torch.randn(n, d)
    W_Q, W_K, W_V, W_O = (torch.randn(d, d) for _ in range(4))
    shapes = {r.name: r.shape for r in shape_ledger(n, d, h).rows}
    W_1, W_2 = torch.randn(*shapes["FFN W_1"]), torch.randn(*shapes["FFN W_2"])  # the ledger's own shapes must chain
    with FlopCounterMode(display=False) as counter:
        q = (x @ W_Q).view(n, h, d_k).transpose(0, 1)  # (h, n, d_k)
        k = (x @ W_K).view(n, h, d_k).transpose(0, 1)
        v = (x @ W_V).view(n, h, d_k).transpose(0, 1)
        a = torch.softmax(q @ k.transpose(-2, -1) / d_k**0.5, dim=-1)  # (h, n, n)
        o = (a @ v).transpose(0, 1).reshape(n, d) @ W_O
        torch.relu(o @ W_1) @ W_2
    led = shape_ledger(n, d, h)
    assert 2 * led.cost.total == counter.get_total_flops()
    assert led.cost.attention_matrix == 2 * n * n * d and led.cost.dense == 12 * n * d * d


def test_ledger_crossover_and_errors():
    d = 64
    at = shape_ledger(6 * d, d, 8).cost
    assert at.attention_matrix == at.dense and at.crossover_n == 6 * d
    assert shape_ledger(10 * d, d, 8).cost.attention_share > 0.5 > shape_ledger(d, d, 8).cost.attention_share
    with pytest.raises(ValueError, match="heads must divide d_model"):
        shape_ledger(4, 4, 3)
    for bad in (0, -1, "x", 1.5, None):
        with pytest.raises(ValueError, match="n must be a whole number"):
            shape_ledger(bad, 4, 2)


# ---- the terminal view ---------------------------------------------------------------------------


def test_cli_toy_prints_the_lesson():
    import json
    from dataclasses import asdict

    from typer.testing import CliRunner

    from attnlab.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["toy", "--query", "3", "--causal", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout) == json.loads(json.dumps(asdict(toy_lab(3, causal=True))))
    r = runner.invoke(app, ["toy", "-q", "它", "--lang", "en"])
    assert r.exit_code == 0 and "A = softmax(S)" in r.stdout and "0.872" in r.stdout and "Head 2" in r.stdout
    r = runner.invoke(app, ["toy", "--query", "狗"])
    assert r.exit_code == 2 and "query must be one of" in r.output and "Traceback" not in r.output


def test_the_toys_own_cases_of_equal_weights_and_unequal_importance():
    """lookup's disagreements() against a brute-force reading of every toy query and head (numpy, not the
    lesson's code): where one ‖a_j v_j‖ is longest and another key weighs as much, the page lists it, and the
    /lookup page shows each case with the numbers and a link to its state."""
    from fastapi.testclient import TestClient

    from attnlab.lessons.toy.soft_lookup import disagreements
    from attnlab.web.app import create_app

    expected = []
    for query in TOKENS:
        lab = toy_lab(query, causal=False)
        for head, h in enumerate(lab.heads, start=1):
            a = np.array(h.row.weights)
            c = np.linalg.norm(a[:, None] * np.array(h.V), axis=1)  # ‖a_j v_j‖ from the head's own V
            best = int(np.argmax(c))
            unique = np.sum(np.isclose(c, c[best], rtol=0, atol=1e-9)) == 1
            rivals = [j for j in range(len(a)) if j != best and a[j] >= a[best] - 1e-9]
            if unique and rivals:
                expected.append((query, head, TOKENS[best]))
    found = disagreements()
    assert [(d.query, d.head, d.top_contribution) for d in found] == expected and expected  # the toy has such cases
    for d in found:
        assert d.contribution == pytest.approx(
            d.weight * np.linalg.norm(toy_lab(d.query).heads[d.head - 1].V[TOKENS.index(d.top_contribution)])
        )
    client = TestClient(create_app())
    for lang in ("zh", "en"):
        page = client.get("/lookup", params={"lang": lang}).text
        for d in found:
            assert f'data-query="{d.query}" data-head="{d.head}"' in page
        assert t("toy.lookup.imp.toy.none", lang) not in page
