"""The calculator the model calls: + − × ÷ and parentheses over whole numbers, parsed by hand (never eval) with
bounds on everything a call can ask for, so a malformed or hostile call gets an error, as a real tool API returns
one, and never a hang or a huge number."""

from __future__ import annotations

MAX_CHARS = 40  # the longest call read
MAX_DIGITS = 6  # per number
MAX_DEPTH = 8  # nested parentheses
MAX_ABS = 10**15  # the largest result (and intermediate) allowed
OPS = {"+": 1, "-": 1, "*": 2, "/": 2}  # precedence
SAME = str.maketrans({"×": "*", "÷": "/", "−": "-", " ": None})  # the page writes × ÷ −


class CalcError(ValueError):
    """A call the calculator refuses: what is wrong, in one line."""


def tokens(expr: str) -> list[str]:
    text = expr.translate(SAME)
    if not text:
        raise CalcError("empty expression")
    if len(text) > MAX_CHARS:
        raise CalcError(f"expression longer than {MAX_CHARS} characters ({len(text)})")
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch.isdigit() and ch.isascii():
            if out and out[-1].isdigit():
                if len(out[-1]) >= MAX_DIGITS:
                    raise CalcError(f"a number longer than {MAX_DIGITS} digits")
                out[-1] += ch
            else:
                out.append(ch)
        elif ch in OPS or ch in "()":
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth > MAX_DEPTH:
                raise CalcError(f"parentheses nested deeper than {MAX_DEPTH}")
            if depth < 0:
                raise CalcError("a ) without its (")
            out.append(ch)
        else:
            raise CalcError(f"unexpected character {ch!r}")
    if depth:
        raise CalcError("a ( without its )")
    return out


def _apply(op: str, a: int, b: int) -> int:
    if op == "/":
        if b == 0:
            raise CalcError("division by zero")
        if a % b:
            raise CalcError(f"{a}/{b} is not a whole number")
        r = a // b
    else:
        r = a + b if op == "+" else a - b if op == "-" else a * b
    if abs(r) >= MAX_ABS:
        raise CalcError("result too large")
    return r


def evaluate(expr: str) -> int:
    """The value of `expr` (shunting-yard, no recursion); CalcError for anything else."""
    values: list[int] = []
    ops: list[str] = []
    expect_operand = True

    def reduce() -> None:
        b, a = values.pop(), values.pop()
        values.append(_apply(ops.pop(), a, b))

    for tok in tokens(expr):
        if tok.isdigit():
            if not expect_operand:
                raise CalcError("two numbers in a row")
            values.append(int(tok))
            expect_operand = False
        elif tok == "(":
            if not expect_operand:
                raise CalcError("a ( right after a number")
            ops.append(tok)
        elif tok == ")":
            if expect_operand:
                raise CalcError("a ) where a number should be")
            while ops[-1] != "(":
                reduce()
            ops.pop()
        else:
            if expect_operand:
                raise CalcError(f"{tok} where a number should be")
            while ops and ops[-1] != "(" and OPS[ops[-1]] >= OPS[tok]:
                reduce()
            ops.append(tok)
            expect_operand = True
    if expect_operand:
        raise CalcError("ends with an operator")
    while ops:
        reduce()
    return values[0]
