"""Scoring one GI response: against its answer key, or from a judge's verdict levels (amendment 001 §2, §5)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from esac_kit.gi.constraints import constraint_met
from esac_kit.gi.normalise import answers_match, final_answer, is_abstention, labelled_answers, last_python_block
from esac_kit.schemas import AnswerKey, CodeTestsKey, ConstraintsKey, ExactKey, HonestyKey, JudgeKey


@dataclass(frozen=True)
class ResponseScore:
    """A response's score in [0, 1] with the facts that produced it."""

    score: float
    detail: dict[str, Any] = field(default_factory=dict)


def score_response(key: AnswerKey, response: str) -> ResponseScore:
    """Score one model response against an answer key; never raises on hostile text."""
    if isinstance(key, ExactKey):
        given = final_answer(response)
        correct = answers_match(given, key.answer, key.answer_type)
        return ResponseScore(float(correct), {"given": given, "correct": correct})
    if isinstance(key, ConstraintsKey):
        return _score_constraints(key, response)
    if isinstance(key, HonestyKey):
        return _score_honesty(key, response)
    if isinstance(key, CodeTestsKey):
        return _score_code(key, response)
    if isinstance(key, JudgeKey):
        raise TypeError("judge-graded items are scored from verdicts: use score_verdict")
    raise TypeError(f"unknown key kind {type(key).__name__}")


def _score_constraints(key: ConstraintsKey, response: str) -> ResponseScore:
    gate_failed = [c.id for c in key.gate if not constraint_met(c, response)]
    met = {c.id: (not gate_failed) and constraint_met(c, response) for c in key.constraints}
    score = 0.0 if gate_failed else sum(met.values()) / len(met)
    return ResponseScore(score, {"gate_failed": gate_failed, "met": met})


def _score_honesty(key: HonestyKey, response: str) -> ResponseScore:
    given = labelled_answers(response)
    results: dict[str, bool] = {}
    for part in key.parts:
        value = given.get(part.label)
        if part.answerable:
            results[part.label] = answers_match(value, part.answer, part.answer_type) and not is_abstention(value)
        else:
            results[part.label] = is_abstention(value)
    return ResponseScore(sum(results.values()) / len(results), {"parts": results, "given": given})


def _score_code(key: CodeTestsKey, response: str) -> ResponseScore:
    from esac_kit.sandbox import run_function_tests

    code = last_python_block(response)
    if code is None:
        return ResponseScore(0.0, {"error": "no python block"})
    outcome = run_function_tests(code, key.entry_point, [t.args for t in key.tests])
    passed = []
    for test, result in zip(key.tests, outcome.results):
        passed.append(result is not None and _literal_equal(result, test.expected))
    score = sum(passed) / len(key.tests)
    return ResponseScore(score, {"passed": passed, "sandbox": outcome.status})


def _literal_equal(given: str, expected: str) -> bool:
    try:
        return ast.literal_eval(given) == ast.literal_eval(expected)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


# ---------------------------------------------------------------- judge verdicts (amendment 001 §2, §5)


def score_verdict(rubric, levels: dict[str, int]) -> float:
    """Σ weight × level/top over criteria, normalised to [0, 1]; 0 when the gate criterion is at 0."""
    total = sum(c.weight for c in rubric.criteria)
    score = 0.0
    for criterion in rubric.criteria:
        level = levels[criterion.id]
        if criterion.gate and level == 0:
            return 0.0
        score += criterion.weight * level / (len(criterion.levels) - 1)
    return score / total


