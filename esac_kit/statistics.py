"""Statistics of replicates (SPEC §7): item spreads, nested variance components, judge reliability, a D-study,
exact category intervals with a PASS / FAIL / INCONCLUSIVE label, and paired comparisons of two runs.

Formulas: Miller 2024, "Adding Error Bars to Evals" (arXiv 2411.00640): item scores are the sampling unit,
the item score of a resampled item is the mean of its observations, SE = s/√n, paired differences and the
minimum detectable effect; and the expected mean squares of the balanced nested random-effects ANOVA

    y_ijk = μ + α_i + β_j(i) + ε_k(ij),   i = 1..I items, j = 1..a answers (model replicates), k = 1..b judge calls,
    E[MS_item] = σ²_judge + b σ²_answer + a b σ²_item,  E[MS_answer] = σ²_judge + b σ²_answer,  E[MS_judge] = σ²_judge.

Every function is pure and takes the tidy observation table of ONE run (columns run_id, item_id, category,
model_replicate, judge_replicate, score; journal.observations_frame). Judge-graded observations are those with a
judge replicate (2 answers × 2 judge calls, amendment 001 §5); deterministic items have one observation.
The pass threshold is the suite's pass rule: 60 % of each category's points and of the total (amendment 001 §10).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from esac_kit.scoring import AMENDMENT_001_PASS, PassRule

OVERALL = "overall"
PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
REQUIRED_COLUMNS = ("run_id", "item_id", "category", "model_replicate", "judge_replicate", "score")
_TOL = 1e-9  # as scoring._clears: 6/10 must not fail on 5.999999 after float weighting


# ---------------------------------------------------------------- reading the observation table


def _check(obs: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in obs.columns]
    if missing:
        raise ValueError(f"observation table lacks column(s) {', '.join(missing)}")
    runs = obs["run_id"].to_numpy()
    if len(runs) and (runs[1:] != runs[0]).any():
        raise ValueError(f"observation table holds {obs['run_id'].nunique()} runs; pass one run at a time")


def _floats(column: pd.Series) -> np.ndarray:
    return column.to_numpy(dtype=float, na_value=np.nan)


@dataclass(frozen=True)
class _Judged:
    """Judge-graded observations sorted by (item, model replicate, judge replicate), with group indices."""

    items: np.ndarray  # item ids, sorted
    categories: np.ndarray  # category of each item
    item_of_answer: np.ndarray  # item index of each answer
    answer_of_obs: np.ndarray  # answer index of each observation
    y: np.ndarray  # scores

    @property
    def item_of_obs(self) -> np.ndarray:
        return self.item_of_answer[self.answer_of_obs]


def _judged(obs: pd.DataFrame) -> _Judged:
    _check(obs)
    judge = _floats(obs["judge_replicate"])
    mask = ~np.isnan(judge)
    if not mask.any():
        empty = np.array([], dtype=object)
        return _Judged(empty, empty, np.array([], dtype=np.intp), np.array([], dtype=np.intp), np.array([]))
    codes, items = pd.factorize(obs["item_id"].to_numpy()[mask], sort=True)
    model = _floats(obs["model_replicate"])[mask]
    judge = judge[mask]
    y = _floats(obs["score"])[mask]
    categories = obs["category"].to_numpy()[mask]
    order = np.lexsort((judge, model, codes))
    codes, model, judge, y, categories = codes[order], model[order], judge[order], y[order], categories[order]
    same_item = codes[1:] == codes[:-1]
    same_answer = same_item & (model[1:] == model[:-1])
    if (same_answer & (judge[1:] == judge[:-1])).any():
        raise ValueError("duplicate observation: an (item, model replicate, judge replicate) occurs twice")
    if np.isnan(y).any():
        raise ValueError("a judge-graded observation has no score")
    new_answer = np.r_[True, ~same_answer]
    first_obs_of_item = np.flatnonzero(np.r_[True, ~same_item])
    if (categories != categories[first_obs_of_item][codes]).any():
        raise ValueError("an item appears under two categories")
    return _Judged(np.asarray(items, dtype=object), categories[first_obs_of_item], codes[new_answer],
                   np.cumsum(new_answer) - 1, y)


def _balanced_cube(judged: _Judged) -> tuple[np.ndarray, int]:
    """Items of the modal complete design (a answers × b judge calls) as an (I, a, b) array, and the count left out."""
    n_items = len(judged.items)
    if n_items == 0:
        return np.empty((0, 0, 0)), 0
    per_answer = np.bincount(judged.answer_of_obs)
    answers = np.bincount(judged.item_of_answer, minlength=n_items)
    first_answer = np.r_[0, np.cumsum(answers)[:-1]]
    low = np.minimum.reduceat(per_answer, first_answer)
    high = np.maximum.reduceat(per_answer, first_answer)
    even = low == high
    designs, counts = np.unique(answers[even] * 1_000_000 + low[even], return_counts=True)
    design = designs[counts == counts.max()].max()  # the commonest design; a tie goes to the larger one
    a, b = int(design // 1_000_000), int(design % 1_000_000)
    keep = even & (answers == a) & (low == b)
    cube = judged.y[keep[judged.item_of_obs]].reshape(-1, a, b)
    return cube, int(n_items - keep.sum())


def _ratio(numerator, denominator):
    """numerator / denominator, NaN where the denominator is not positive (no warnings)."""
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator, dtype=float)
    out = np.full(np.broadcast(numerator, denominator).shape, np.nan)
    good = denominator > 0
    np.divide(numerator, denominator, out=out, where=good)
    return out if out.ndim else float(out)


# ---------------------------------------------------------------- 1. item spread


def item_spread(obs: pd.DataFrame) -> pd.DataFrame:
    """Per judge-graded item: mean of all observations, answer spread, judge spread and observation counts."""
    judged = _judged(obs)
    answer, item_of_answer, y = judged.answer_of_obs, judged.item_of_answer, judged.y
    n_items = len(judged.items)
    per_answer = np.bincount(answer)
    answer_mean = np.bincount(answer, weights=y) / per_answer if len(y) else np.array([])
    within = np.bincount(answer, weights=(y - answer_mean[answer]) ** 2) if len(y) else np.array([])
    item_of_obs = judged.item_of_obs
    n_obs = np.bincount(item_of_obs, minlength=n_items)
    n_answers = np.bincount(item_of_answer, minlength=n_items)
    mean = _ratio(np.bincount(item_of_obs, weights=y, minlength=n_items), n_obs)
    mean_of_answers = _ratio(np.bincount(item_of_answer, weights=answer_mean, minlength=n_items), n_answers)
    between = np.bincount(item_of_answer, weights=(answer_mean - mean_of_answers[item_of_answer]) ** 2,
                          minlength=n_items)
    answer_spread = np.sqrt(_ratio(between, n_answers - 1))
    judge_df = np.bincount(item_of_answer, weights=per_answer - 1, minlength=n_items)
    judge_spread = np.sqrt(_ratio(np.bincount(item_of_answer, weights=within, minlength=n_items), judge_df))
    return pd.DataFrame({"item_id": judged.items, "category": judged.categories, "n_obs": n_obs,
                         "n_answers": n_answers, "mean": mean, "answer_spread": answer_spread,
                         "judge_spread": judge_spread})


# ---------------------------------------------------------------- 2. variance components


@dataclass(frozen=True)
class VarianceComponents:
    """Nested random-effects ANOVA (items > answers > judge calls) by the method of moments, balanced design."""

    n_items: int  # judge-graded items in the balanced design
    n_answers: int  # a: model replicates per item
    n_judgements: int  # b: judge replicates per answer
    n_items_excluded: int  # judge-graded items whose design differs from the modal a × b (incomplete runs)
    grand_mean: float
    df_item: int
    df_answer: int
    df_judge: int
    ms_item: float
    ms_answer: float
    ms_judge: float
    var_item_raw: float  # (MS_item − MS_answer) / (a b)
    var_answer_raw: float  # (MS_answer − MS_judge) / b
    var_judge_raw: float  # MS_judge
    var_item: float  # truncated at 0
    var_answer: float
    var_judge: float

    def anova_table(self) -> pd.DataFrame:
        """The ANOVA table: source, df, mean square, expected mean square and the component estimates."""
        a, b = self.n_answers, self.n_judgements
        return pd.DataFrame({
            "source": ["item", "answer(item)", "judge(answer)"],
            "df": [self.df_item, self.df_answer, self.df_judge],
            "mean_square": [self.ms_item, self.ms_answer, self.ms_judge],
            "expected_mean_square": [f"σ²_judge + {b}σ²_answer + {a * b}σ²_item", f"σ²_judge + {b}σ²_answer",
                                     "σ²_judge"],
            "component_raw": [self.var_item_raw, self.var_answer_raw, self.var_judge_raw],
            "component": [self.var_item, self.var_answer, self.var_judge]})


def variance_components(obs: pd.DataFrame) -> VarianceComponents:
    """σ²_item, σ²_answer, σ²_judge by the method of moments from the balanced nested ANOVA's expected mean squares."""
    cube, excluded = _balanced_cube(_judged(obs))
    n, a, b = cube.shape
    nan = float("nan")
    if n == 0:
        return VarianceComponents(0, 0, 0, excluded, nan, 0, 0, 0, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    answer_mean = cube.mean(axis=2)
    item_mean = answer_mean.mean(axis=1)
    grand = float(item_mean.mean())
    df_item, df_answer, df_judge = n - 1, n * (a - 1), n * a * (b - 1)
    ms_item = _ratio(a * b * ((item_mean - grand) ** 2).sum(), df_item)
    ms_answer = _ratio(b * ((answer_mean - item_mean[:, None]) ** 2).sum(), df_answer)
    ms_judge = _ratio(((cube - answer_mean[:, :, None]) ** 2).sum(), df_judge)
    var_judge = ms_judge
    var_answer = (ms_answer - ms_judge) / b
    var_item = (ms_item - ms_answer) / (a * b)
    return VarianceComponents(n, a, b, excluded, grand, df_item, df_answer, df_judge, ms_item, ms_answer, ms_judge,
                              var_item, var_answer, var_judge, _floor0(var_item), _floor0(var_answer),
                              _floor0(var_judge))


def _floor0(value: float) -> float:
    return value if np.isnan(value) else max(value, 0.0)


# ---------------------------------------------------------------- 3. judge reliability


@dataclass(frozen=True)
class JudgeReliability:
    """Agreement of the judge replicates of each answer: ICC(1), ICC(1,k) and Krippendorff's interval alpha."""

    n_answers: int  # answers (item × model replicate) entering the ICC
    n_judgements: int  # k: judge replicates per answer in the ICC
    ms_between: float  # between answers, df n − 1
    ms_within: float  # within answers, df n (k − 1)
    icc1: float  # one-way random, single judgement: (MSB − MSW) / (MSB + (k − 1) MSW)
    icc1_low: float  # F-based confidence interval (Shrout & Fleiss 1979)
    icc1_high: float
    icc1k: float  # one-way random, mean of the k judgements: (MSB − MSW) / MSB
    alpha: float  # Krippendorff's alpha, interval metric, over every answer with ≥ 2 judgements
    alpha_answers: int  # pairable answers entering alpha


def judge_reliability(obs: pd.DataFrame, level: float = 0.95) -> JudgeReliability:
    """ICC(1), one-way random effects with answers as targets and exchangeable judge calls, and Krippendorff's alpha."""
    judged = _judged(obs)
    per_answer = np.bincount(judged.answer_of_obs)
    nan = float("nan")
    # Krippendorff (interval): D_o = (2/N) Σ_u m_u SS_u / (m_u − 1), D_e = 2 SS_total / (N − 1), alpha = 1 − D_o/D_e,
    # over the N values of the answers with m_u ≥ 2 values (pairable units).
    pairable = per_answer >= 2
    values_mask = pairable[judged.answer_of_obs] if len(per_answer) else np.array([], dtype=bool)
    alpha = nan
    if values_mask.sum() >= 2:
        y, unit = judged.y[values_mask], judged.answer_of_obs[values_mask]
        m = per_answer[unit]
        unit_mean = np.bincount(unit, weights=y) / np.maximum(per_answer, 1)
        observed = 2.0 / len(y) * np.sum((y - unit_mean[unit]) ** 2 * m / (m - 1))
        expected = 2.0 * np.sum((y - y.mean()) ** 2) / (len(y) - 1)
        alpha = float(1.0 - observed / expected) if expected > 0 else nan
    if not pairable.any():
        return JudgeReliability(0, 0, nan, nan, nan, nan, nan, nan, alpha, 0)
    sizes, counts = np.unique(per_answer[pairable], return_counts=True)
    k = int(sizes[counts == counts.max()].max())
    keep = per_answer == k
    table = judged.y[keep[judged.answer_of_obs]].reshape(-1, k)
    n = table.shape[0]
    row_mean = table.mean(axis=1)
    msb = _ratio(k * ((row_mean - table.mean()) ** 2).sum(), n - 1)
    msw = _ratio(((table - row_mean[:, None]) ** 2).sum(), n * (k - 1))
    icc1 = _ratio(msb - msw, msb + (k - 1) * msw)
    icc1k = _ratio(msb - msw, msb)
    low = high = nan
    if n >= 2 and msw > 0:
        f = msb / msw
        tail = (1 + level) / 2
        f_low = f / special.fdtri(n - 1, n * (k - 1), tail)
        f_high = f * special.fdtri(n * (k - 1), n - 1, tail)
        low, high = (f_low - 1) / (f_low + k - 1), (f_high - 1) / (f_high + k - 1)
    return JudgeReliability(n, k, msb, msw, icc1, float(low), float(high), icc1k, alpha, int(pairable.sum()))


# ---------------------------------------------------------------- 4. D-study


def d_study(components: VarianceComponents, answers: Sequence[int] = (1, 2, 4, 8),
            judgements: Sequence[int] = (1, 2, 4), n_items: float | None = None,
            points: float = 1.0) -> pd.DataFrame:
    """SE of an item mean (and, given n_items, of a category score) for each design of answers × judge calls."""
    # Error variance of one item's score: σ²_answer/n_a + σ²_judge/(n_a n_j) (truncated components);
    # G = σ²_item/(σ²_item + error). With n_items (for unequal weights the effective count (Σw)²/Σw²): the SE of
    # the category score with the items fixed, √(error/n), and with the items a sample of their domain,
    # √((σ²_item + error)/n), times `points`.
    grid_a, grid_j = (g.ravel() for g in np.meshgrid(np.asarray(answers, dtype=float),
                                                      np.asarray(judgements, dtype=float), indexing="ij"))
    error = components.var_answer / grid_a + components.var_judge / (grid_a * grid_j)
    frame = pd.DataFrame({"answers": grid_a.astype(int), "judgements": grid_j.astype(int),
                          "observations": (grid_a * grid_j).astype(int), "var_error": error,
                          "se_item": np.sqrt(error),
                          "g_coefficient": _ratio(np.full_like(error, components.var_item),
                                                  components.var_item + error)})
    if n_items is not None:
        frame["se_category_fixed"] = points * np.sqrt(error / n_items)
        frame["se_category_random"] = points * np.sqrt((components.var_item + error) / n_items)
    return frame


# ---------------------------------------------------------------- item scores and weighted category means


@dataclass(frozen=True)
class _Items:
    """Item scores (mean of each item's observations) sorted by category then item id."""

    ids: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    category_of_item: np.ndarray  # index into categories
    categories: np.ndarray  # present categories, sorted
    starts: np.ndarray  # first item of each category
    counts: np.ndarray  # items per category


def _items(obs: pd.DataFrame, weights: Mapping[str, float] | None) -> _Items:
    _check(obs)
    codes, ids = pd.factorize(obs["item_id"].to_numpy(), sort=True)
    y = _floats(obs["score"])
    if np.isnan(y).any():
        raise ValueError("an observation has no score")
    n_obs = np.bincount(codes)
    scores = np.bincount(codes, weights=y) / n_obs
    categories = obs["category"].to_numpy()
    category_of_item = np.empty(len(ids), dtype=object)
    category_of_item[codes] = categories
    if (category_of_item[codes] != categories).any():
        raise ValueError("an item appears under two categories")
    cat_codes, present = pd.factorize(category_of_item, sort=True)
    order = np.argsort(cat_codes, kind="stable")
    ids = np.asarray(ids, dtype=object)[order]
    if weights is None:
        w = np.ones(len(ids))
    else:
        try:
            w = np.array([weights[i] for i in ids], dtype=float)
        except KeyError as error:
            raise KeyError(f"no weight for item {error.args[0]!r}") from None
        if (w <= 0).any():
            raise ValueError("item weights must be positive")
    counts = np.bincount(cat_codes, minlength=len(present))
    starts = np.r_[0, np.cumsum(counts)[:-1]] if len(counts) else np.array([], dtype=np.intp)
    return _Items(ids, scores[order], w, cat_codes[order], np.asarray(present, dtype=object), starts, counts)


@dataclass(frozen=True)
class _Means:
    """Per-category weighted mean of a per-item quantity and its t-based standard error (fraction scale)."""

    mean: np.ndarray
    se: np.ndarray  # NaN for a category with one item
    df: np.ndarray  # items − 1


def _weighted_means(values: np.ndarray, items: _Items) -> _Means:
    # μ̂ = Σ w x / Σ w; σ̂² = Σ w (x − μ̂)² / (Σ w − Σ w² / Σ w) (reliability weights; s² when the weights are equal);
    # Var(μ̂) = σ̂² Σ w² / (Σ w)², i.e. s²/n for equal weights (Miller 2024: the item score is the sampling unit).
    w, starts = items.weights, items.starts
    total = np.add.reduceat(w, starts)
    total2 = np.add.reduceat(w * w, starts)
    mean = np.add.reduceat(w * values, starts) / total
    spread = np.add.reduceat(w * (values - mean[items.category_of_item]) ** 2, starts)
    variance = _ratio(spread, total - total2 / total)
    variance = np.where(items.counts >= 2, variance, np.nan)
    return _Means(mean, np.sqrt(variance * total2) / total, (items.counts - 1).astype(float))


def _category_order(points: Mapping[str, float], items: _Items) -> np.ndarray:
    """Position in items.categories of each category of `points` (−1 when the run has none of its items)."""
    position = {c: i for i, c in enumerate(items.categories)}
    unknown = [c for c in items.categories if c not in points]
    if unknown:
        raise KeyError(f"no points for category {unknown[0]!r}")
    return np.array([position.get(c, -1) for c in points], dtype=np.intp)


def _pick(values: np.ndarray, where: np.ndarray, missing=np.nan) -> np.ndarray:
    """values[where], with `missing` where the index is −1 (a category the run has no items of)."""
    return np.r_[values, missing][where]


def _welch(se: np.ndarray, df: np.ndarray) -> tuple[float, float]:
    """Standard error of a sum of independent estimates and its Welch–Satterthwaite degrees of freedom."""
    variance = float(np.sum(se ** 2))
    if np.isnan(variance):
        return float("nan"), float("nan")
    if variance == 0:
        return 0.0, float(np.sum(df))
    return float(np.sqrt(variance)), variance ** 2 / float(np.sum(_ratio(se ** 4, df) if se.size else 0.0))


def _t_quantile(df, probability: float):
    return special.stdtrit(np.asarray(df, dtype=float), probability)


# ---------------------------------------------------------------- 5. category intervals

INTERVAL_METHOD = "exact"  # Clopper–Pearson on the effective successes; what "CI95 exact" in a report means
MIN_ITEMS_FOR_INTERVAL = 3  # with 2 items an interval over items spans nearly 0 to the maximum: none is shown
LEGEND = ("Legend: 'meets line' / 'below line' is the observed score against the pass line, and these decide the "
          "verdict (amendment 001 §10). PASS / FAIL / INCONCLUSIVE is its uncertainty: the exact 95 % interval "
          "('CI95 exact', Clopper–Pearson on the effective number of successes) lies wholly at or above the line, "
          "wholly below it, or across it; at a true score on the line a false PASS happens at most 2.5 % of the "
          "time, so a category of 5 or fewer items never shows PASS. A 2-item category has no interval (it would "
          "span nearly 0 to its maximum): 'SE fixed' is the spread over the replicates of those two items only. "
          "The item bootstrap (report.json and the notebook) is secondary and collapses to a point when the items "
          "score alike.")


def exact_bounds(mean, n_eff, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson bounds (fraction scale) on x = n_eff · mean effective successes out of n_eff."""
    # For item scores in [0, 1] the binomial is the largest variance at a given mean, so the bound is conservative
    # for fractional items (Korn & Graubard 1998 for the effective n); benchmarks/intervals.py shows the coverage.
    mean, n = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(n_eff, dtype=float))
    n = np.where(n > 0, n, np.nan)
    x = np.clip(mean, 0.0, 1.0) * n
    tail = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(x > 0, special.betaincinv(np.maximum(x, 1e-300), n - x + 1, tail), 0.0)
        high = np.where(n - x > 0, special.betaincinv(x + 1, np.maximum(n - x, 1e-300), 1 - tail), 1.0)
    nan = np.isnan(x)
    return np.where(nan, np.nan, low), np.where(nan, np.nan, high)


def exact_p_pass(mean, n_eff, line) -> np.ndarray:
    """1 − the exact one-sided p-value of "true share ≤ line" (fraction scale): PASS needs ≥ 97.5 %."""
    mean, n, line = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (mean, n_eff, line)))
    x = np.clip(mean, 0.0, 1.0) * n
    line = np.clip(line - _TOL, 0.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(x > 0, 1 - special.betainc(np.maximum(x, 1e-300), n - x + 1, line), 0.0)
    return np.where(np.isnan(x) | ~(n > 0), np.nan, p)


def exact_labels(low, high, line) -> np.ndarray:
    """PASS when the exact lower bound reaches the line, FAIL when the upper bound is below it, else INCONCLUSIVE."""
    low, high, line = (np.asarray(v, dtype=float) for v in (low, high, line))
    label = np.where(low + _TOL >= line, PASS, np.where(high + _TOL < line, FAIL, INCONCLUSIVE))
    return np.where(np.isnan(low) | np.isnan(high), INCONCLUSIVE, label)


def category_intervals(obs: pd.DataFrame, weights: Mapping[str, float] | None, points: Mapping[str, float],
                       level: float = 0.95, n_boot: int = 2000, seed: int = 0,
                       rule: PassRule = AMENDMENT_001_PASS) -> pd.DataFrame:
    """Per category and overall: score, exact interval, fixed-items SE, item bootstrap, P(score ≥ the pass line),
    PASS / FAIL / INCONCLUSIVE and a note."""
    items = _items(obs, weights)
    where = _category_order(points, items)
    means = _weighted_means(items.scores, items)
    max_points = np.array([float(points[c]) for c in points])
    n_items = _pick(items.counts, where, 0)
    score = max_points * _pick(means.mean, where)
    se = max_points * _pick(means.se, where)
    df = _pick(means.df, where)
    w, starts = items.weights, items.starts
    n_eff = _pick(np.add.reduceat(w, starts) ** 2 / np.add.reduceat(w * w, starts) if len(w) else np.array([]),
                  where)
    fixed = max_points * _pick(_fixed_items_se(obs, items), where)
    # Overall: the categories are fixed strata with disjoint items, so Var(total) = Σ Var(category score); an item's
    # share of the total is its category's points × w / Σw, and the exact bound uses the Kish effective n of those.
    total_se, total_df = _welch(se, df)
    item_points = np.array([float(points[c]) for c in items.categories])[items.category_of_item] \
        * w / np.add.reduceat(w, starts)[items.category_of_item] if len(w) else np.array([])
    total_n_eff = item_points.sum() ** 2 / (item_points ** 2).sum() if len(w) else np.nan
    score = np.r_[score, score.sum()]
    se = np.r_[se, total_se]
    df = np.r_[df, total_df]
    n_eff = np.r_[n_eff, total_n_eff]
    fixed = np.r_[fixed, np.sqrt(np.sum(fixed ** 2))]
    max_points = np.r_[max_points, max_points.sum()]
    n_items = np.r_[n_items, n_items.sum()]
    threshold = rule.line(max_points)
    share = score / max_points
    low, high = exact_bounds(share, n_eff, level)
    label = exact_labels(low, high, rule.fraction)
    p_pass = exact_p_pass(share, n_eff, rule.fraction)
    shown = n_items >= MIN_ITEMS_FOR_INTERVAL
    boot = _bootstrap(items, where, max_points[:-1], level, n_boot, seed)
    notes = [f"{n} item{'s' if n > 1 else ''}: no interval over items (it would span nearly 0–{m:g}); se_fixed is the SE over the "
             f"replicates of these items, taken as fixed" + ("" if np.isfinite(f) else " (not measured: one "
                                                               "observation per item)")
             if 0 < n < MIN_ITEMS_FOR_INTERVAL else ("no scored items" if n == 0 else "")
             for n, m, f in zip(n_items, max_points, fixed)]
    return pd.DataFrame({"category": [*points, OVERALL], "n_items": n_items,
                         "points": max_points, "threshold": threshold, "score": score, "se": se, "df": df,
                         "n_eff": n_eff, "low": np.where(shown, max_points * low, np.nan),
                         "high": np.where(shown, max_points * high, np.nan), "se_fixed": fixed,
                         "boot_low": np.where(shown, boot[0], np.nan), "boot_high": np.where(shown, boot[1], np.nan),
                         "p_pass": p_pass, "label": label, "note": notes})


def _fixed_items_se(obs: pd.DataFrame, items: _Items) -> np.ndarray:
    """Per category, the SE of the weighted mean from the replicates of its items taken as fixed (NaN when an item
    has one observation)."""
    # Var(item mean) = s²(answer means)/a for a ≥ 2 answers (it holds σ²_answer/a + σ²_judge/(ab)), else
    # s²(observations)/m for one answer judged m ≥ 2 times; deterministic items have no replicate to measure.
    judged = _judged(obs)
    var_item = np.full(len(items.ids), np.nan)
    if len(judged.items):
        per_answer = np.bincount(judged.answer_of_obs)
        answer_mean = np.bincount(judged.answer_of_obs, weights=judged.y) / per_answer
        n_items = len(judged.items)
        a = np.bincount(judged.item_of_answer, minlength=n_items)
        item_mean = np.bincount(judged.item_of_answer, weights=answer_mean, minlength=n_items) / a
        between = np.bincount(judged.item_of_answer, weights=(answer_mean - item_mean[judged.item_of_answer]) ** 2,
                              minlength=n_items)
        m = np.bincount(judged.item_of_obs, minlength=n_items)
        obs_mean = np.bincount(judged.item_of_obs, weights=judged.y, minlength=n_items) / m
        within = np.bincount(judged.item_of_obs, weights=(judged.y - obs_mean[judged.item_of_obs]) ** 2,
                             minlength=n_items)
        var = np.where(a >= 2, _ratio(between, a - 1) / a, _ratio(within, m - 1) / m)
        position = {item: k for k, item in enumerate(items.ids)}
        var_item[[position[i] for i in judged.items]] = var
    if len(items.ids) == 0:
        return np.array([])
    w, starts = items.weights, items.starts
    return np.sqrt(np.add.reduceat(w * w * var_item, starts)) / np.add.reduceat(w, starts)


def _bootstrap(items: _Items, where: np.ndarray, max_points: np.ndarray, level: float, n_boot: int,
               seed: int) -> np.ndarray:
    """Percentile item-bootstrap bounds (2 × categories+1): items resampled with replacement within each category."""
    n_rows = len(where) + 1
    if n_boot < 1 or len(items.ids) == 0:
        return np.full((2, n_rows), np.nan)
    rng = np.random.default_rng(seed)
    n, k = len(items.ids), len(items.categories)
    column_size = items.counts[items.category_of_item]
    column_start = items.starts[items.category_of_item]
    # Each replicate's category sums come from how often it drew each item: counts (rows × n) @ [w·s | w] (n × 2k),
    # a small matrix product for a suite's few categories; reduceat over the item columns when there are many.
    weighted = items.weights * items.scores
    member = None
    if k <= 64:
        member = np.zeros((n, 2 * k))
        member[np.arange(n), items.category_of_item] = weighted
        member[np.arange(n), k + items.category_of_item] = items.weights
    chunk = max(1, 4_000_000 // n)  # bounds memory for very large item sets
    parts = []
    for begin in range(0, n_boot, chunk):
        rows = min(chunk, n_boot - begin)
        index = column_start + (rng.random((rows, n)) * column_size).astype(np.intp)
        index += (np.arange(rows) * n)[:, None]
        drawn = np.bincount(index.ravel(), minlength=rows * n).reshape(rows, n).astype(float)
        if member is not None:
            sums = drawn @ member
            parts.append(sums[:, :k] / sums[:, k:])
        else:
            parts.append(np.add.reduceat(drawn * weighted, items.starts, axis=1)
                         / np.add.reduceat(drawn * items.weights, items.starts, axis=1))
    means = np.concatenate(parts) if len(parts) > 1 else parts[0]
    present = where >= 0
    replicate = np.full((means.shape[0], n_rows), np.nan)
    replicate[:, :-1][:, present] = means[:, where[present]] * max_points[present]
    replicate[:, -1] = replicate[:, :-1].sum(axis=1)
    return _quantiles(replicate, [(1 - level) / 2, (1 + level) / 2])


def _quantiles(sample: np.ndarray, probabilities: Sequence[float]) -> np.ndarray:
    """Column quantiles by one sort, interpolated linearly as numpy's default; NaN columns give meaningless values."""
    ordered = np.sort(sample, axis=0)
    position = np.asarray(probabilities) * (len(ordered) - 1)
    below = np.floor(position).astype(np.intp)
    above = np.minimum(below + 1, len(ordered) - 1)
    fraction = (position - below)[:, None]
    return ordered[below] * (1 - fraction) + ordered[above] * fraction


def suite_verdict(intervals: pd.DataFrame) -> str:
    """Pass rule under uncertainty (amendment 001 §10): PASS if all rows pass, FAIL if any fails, else INCONCLUSIVE."""
    labels = set(intervals["label"])
    if FAIL in labels:
        return FAIL
    return PASS if labels == {PASS} else INCONCLUSIVE


# ---------------------------------------------------------------- 6. paired comparison


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values, max over j ≤ i of min(1, (m − j + 1) p_(j)); NaN stays NaN, not counted."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    good = ~np.isnan(p)
    m = int(good.sum())
    if m:
        q = p[good]
        order = np.argsort(q, kind="stable")
        adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * q[order]))
        result = np.empty(m)
        result[order] = adjusted
        out[good] = result
    return out


def paired_comparison(obs_a: pd.DataFrame, obs_b: pd.DataFrame, weights: Mapping[str, float] | None,
                      points: Mapping[str, float], level: float = 0.95, power: float = 0.8) -> pd.DataFrame:
    """Two runs on the same items, per category and overall: B − A in points, t interval, correlation, MDE, p-values."""
    a, b = _items(obs_a, weights), _items(obs_b, weights)
    if (len(a.ids) != len(b.ids) or (a.ids != b.ids).any()
            or (a.categories[a.category_of_item] != b.categories[b.category_of_item]).any()):
        only_a, only_b = set(a.ids) - set(b.ids), set(b.ids) - set(a.ids)
        raise ValueError(f"runs differ in items or their categories: only in A {sorted(only_a)[:5]}, "
                         f"only in B {sorted(only_b)[:5]}")
    where = _category_order(points, a)
    diff_means = _weighted_means(b.scores - a.scores, a)
    mean_a, mean_b = _weighted_means(a.scores, a).mean, _weighted_means(b.scores, a).mean
    max_points = np.array([float(points[c]) for c in points])
    n_items = _pick(a.counts, where, 0)
    diff = max_points * _pick(diff_means.mean, where)
    se = max_points * _pick(diff_means.se, where)
    df = _pick(diff_means.df, where)
    corr = _pick(_correlation(a.scores, b.scores, a.category_of_item, a.starts, a.counts), where)
    total_se, total_df = _welch(se, df)
    overall_corr = _correlation(a.scores, b.scores, np.zeros(len(a.ids), dtype=np.intp), np.array([0]),
                                np.array([len(a.ids)]))[0] if len(a.ids) else np.nan
    score_a = np.r_[max_points * _pick(mean_a, where), 0.0]
    score_b = np.r_[max_points * _pick(mean_b, where), 0.0]
    score_a[-1], score_b[-1] = score_a[:-1].sum(), score_b[:-1].sum()
    diff, se, df = np.r_[diff, diff.sum()], np.r_[se, total_se], np.r_[df, total_df]
    corr = np.r_[corr, overall_corr]
    critical = _t_quantile(df, (1 + level) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, diff / se, np.where(np.abs(diff) <= _TOL, 0.0, np.sign(diff) * np.inf))
    t = np.where(np.isnan(se), np.nan, t)
    p = np.where(se > 0, 2 * special.stdtr(np.where(se > 0, df, 1.0), -np.abs(t)),
                 np.where(np.abs(diff) <= _TOL, 1.0, 0.0))
    p = np.where(np.isnan(se), np.nan, p)
    p_holm = np.r_[holm(p[:-1]), np.nan]
    return pd.DataFrame({"category": [*points, OVERALL], "n_items": np.r_[n_items, n_items.sum()],
                         "score_a": score_a, "score_b": score_b, "diff": diff, "se": se, "df": df,
                         "ci_low": diff - critical * se, "ci_high": diff + critical * se, "corr": corr,
                         "mde": (critical + _t_quantile(df, power)) * se, "t": t, "p_value": p, "p_holm": p_holm})


def _correlation(x: np.ndarray, y: np.ndarray, group: np.ndarray, starts: np.ndarray,
                 counts: np.ndarray) -> np.ndarray:
    """Pearson correlation of item scores within each group (NaN with < 2 items or no variance)."""
    mx = np.add.reduceat(x, starts) / counts
    my = np.add.reduceat(y, starts) / counts
    dx, dy = x - mx[group], y - my[group]
    return _ratio(np.add.reduceat(dx * dy, starts),
                  np.sqrt(np.add.reduceat(dx * dx, starts) * np.add.reduceat(dy * dy, starts)))
