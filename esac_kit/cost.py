"""What a run cost, or will cost: a dated price table (shipped as data, overridable) applied to a run's tokens.

A model the table does not list costs None ("unknown"), never 0. Costs are reported beside the scores and decide
none of them, so this module stays outside the scoring fingerprint (esac_kit.fingerprints.OUTSIDE).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from esac_kit.errors import ConfigError

PRICES_FILE = Path(__file__).resolve().parent / "prices.toml"
PRICES_ENV = "ESAC_PRICES"


class Price(BaseModel):
    """USD per million tokens of one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)  # None: cached input bills as input
    cache_write: float | None = Field(default=None, ge=0)  # None: cache writes bill as input
    output: float = Field(ge=0)


class PriceTable(BaseModel):
    """A dated price table: provider -> model-name prefix -> price."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dated: str
    source: str
    batch_discount: float = Field(gt=0, le=1)
    openai: dict[str, Price] = {}
    anthropic: dict[str, Price] = {}
    local: dict[str, Price] = {}

    def price(self, model: str) -> Price | None:
        """The price of a model string (`provider:name[@url]`, or `local`) by its longest listed prefix."""
        if model == "local":
            return next(iter(self.local.values()), None)
        provider, _, rest = model.partition(":")
        name = rest.partition("@")[0]
        provider = "openai" if provider == "openai-responses" else provider  # one price, either OpenAI API
        listed = getattr(self, provider, None) if provider in ("openai", "anthropic") else None
        matches = [prefix for prefix in (listed or {}) if name.startswith(prefix)]
        return listed[max(matches, key=len)] if matches else None


def load_prices(path: Path | None = None) -> PriceTable:
    """The price table: `path`, else $ESAC_PRICES, else the one shipped with the kit."""
    path = path or (Path(os.environ[PRICES_ENV]) if os.environ.get(PRICES_ENV) else PRICES_FILE)
    try:
        return PriceTable.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the price table: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, ValidationError) as error:
        first = error.errors()[0] if isinstance(error, ValidationError) else None
        detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(error)
        raise ConfigError(f"{path}: not a valid price table: {detail}") from None


def tokens_cost(price: Price | None, tokens_in: int, tokens_out: int, cache_read: int = 0,
                cache_write: int = 0, discount: float = 1.0) -> float | None:
    """USD for one call's tokens (cache reads and writes are part of tokens_in), or None at an unknown price."""
    if price is None:
        return None
    fresh = max(0, tokens_in - cache_read - cache_write)
    usd = (fresh * price.input + cache_read * (price.cached_input if price.cached_input is not None else price.input)
           + cache_write * (price.cache_write if price.cache_write is not None else price.input)
           + tokens_out * price.output) / 1e6
    return usd * discount


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else round(sum(values), 6)  # type: ignore[arg-type]


def run_cost(model: str, judge: str | None, observations: list, table: PriceTable, batch: bool = False) -> dict:
    """A run's cost from its journalled observations: model, judge and total USD (None where a price is unknown)."""
    discount = table.batch_discount if batch else 1.0
    answers = {(o.item_id, o.model_replicate): o for o in observations}.values()  # judged answers count once
    model_price, judge_price = table.price(model), table.price(judge) if judge else None
    model_usd = _sum([tokens_cost(model_price, o.tokens_in, o.tokens_out, o.tokens_cache_read,
                                  o.tokens_cache_write, discount) for o in answers])
    judged = [o for o in observations if o.judge_tokens_in or o.judge_tokens_out]
    judge_usd = _sum([tokens_cost(judge_price, o.judge_tokens_in, o.judge_tokens_out, discount=discount)
                      for o in judged]) if judged else 0.0
    return {"model_usd": model_usd, "judge_usd": judge_usd, "total_usd": _sum([model_usd, judge_usd]),
            "prices_dated": table.dated, "batch": batch}


def cost_summary(cost: dict | None) -> str:
    """A report's cost in one line: total, model, judge and the prices' date."""
    if cost is None:
        return "cost: not recorded (a report written before costs were)"
    return (f"cost: {usd(cost['total_usd'])} (model {usd(cost['model_usd'])}, judge {usd(cost['judge_usd'])}; "
            f"prices of {cost['prices_dated']}{', batch discount' if cost.get('batch') else ''})")


def usd(value: float | None) -> str:
    """A cost as the reports print it: "unknown" when a price is missing, never 0."""
    return "unknown" if value is None else f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def estimate(plan, table: PriceTable) -> dict:
    """Before any request: the most calls, tokens and USD a planned run can cost, from each item's budgets."""
    from esac_kit.kinds import RunBudgets, kind_of

    config, manifest = plan.config, plan.suite.manifest
    rows = {"model": [0, 0, 0], "judge": [0, 0, 0]}
    for item in plan.items:
        budget = item.output_budget_tokens or manifest.output_budget_tokens
        budgets = RunBudgets(min(budget, config.max_tokens_cap or budget), config.judge_max_tokens,
                             manifest.episode_token_budget)
        for bound in kind_of(item).call_bounds(item, plan.instances[item.id], budgets):
            row = rows[bound.role]
            row[0], row[1], row[2] = row[0] + bound.calls, row[1] + bound.tokens_in, row[2] + bound.tokens_out
    model_usd = tokens_cost(table.price(config.model), rows["model"][1], rows["model"][2])
    judge_usd = tokens_cost(table.price(config.judge), rows["judge"][1], rows["judge"][2]) if config.judge else 0.0
    return {"calls": {k: v[0] for k, v in rows.items()}, "tokens_in": {k: v[1] for k, v in rows.items()},
            "tokens_out": {k: v[2] for k, v in rows.items()}, "model_usd": model_usd,
            "judge_usd": judge_usd if rows["judge"][0] else 0.0, "total_usd": _sum([model_usd, judge_usd]),
            "prices_dated": table.dated}


def _cost_bound(value: float | None) -> str:
    return "cost unknown (no price listed)" if value is None else f"cost ≤ {usd(value)}"


def format_estimate(bound: dict) -> str:
    """The estimate as `esac-kit run --estimate` prints it."""
    lines = ["upper bounds of this run, before any request (each call at its full output budget):"]
    for role in ("model", "judge"):
        if bound["calls"][role]:
            lines.append(f"  {role:5}  calls {bound['calls'][role]:5d}  input ≤ {bound['tokens_in'][role]:,} tokens  "
                         f"output ≤ {bound['tokens_out'][role]:,} tokens  {_cost_bound(bound[role + '_usd'])}")
    lines.append(f"  total  {_cost_bound(bound['total_usd'])} (prices of {bound['prices_dated']}; input tokens "
                 f"estimated at 4 characters a token)")
    return "\n".join(lines)
