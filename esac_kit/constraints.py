"""Verifiable constraints for instruction items: each check is a pure function of (response, params) -> bool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from esac_kit.schemas import Constraint

Check = Callable[[str, dict[str, Any]], bool]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    """Register a constraint check under the name item keys use."""

    def register(function: Check) -> Check:
        CHECKS[name] = function
        return function

    return register


def constraint_met(constraint: Constraint, response: str) -> bool:
    """Evaluate one constraint; a check that raises on hostile input counts as not met."""
    try:
        return bool(CHECKS[constraint.check](response, constraint.params))
    except KeyError:
        raise
    except Exception:  # a hostile response must never crash scoring
        return False
