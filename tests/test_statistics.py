"""Statistics of replicates (SPEC §7): recovery of planted components, agreement with independent libraries,
exact interval coverage, the pass labels (amendment 001 §10), Holm, and paired comparisons."""

import importlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from esac_kit import statistics as st
from esac_kit.scoring import category_points

# ESAC-GI 1.0 (SPEC §2): category → (points, items, judge-graded); the calibration boundary item weighs 0.5.
GI = {"quant": (15, 5, False), "logic": (15, 5, False), "code": (15, 5, False), "instructions": (10, 5, False),
      "context": (15, 5, False), "honesty": (15, 4, False), "calibration": (5, 5, True), "writing": (10, 2, True)}
GI_POINTS = {c: p for c, (p, _, _) in GI.items()}
GI_ITEMS = [(c, f"{c}-{k}", judged) for c, (_, n, judged) in GI.items() for k in range(n)]
GI_WEIGHTS = {i: (0.5 if i == "calibration-4" else 1.0) for _, i, _ in GI_ITEMS}


def frame(rows, run_id="run"):
    """A tidy observation table from (item, category, model replicate, judge replicate or None, score) rows."""
    out = pd.DataFrame(rows, columns=["item_id", "category", "model_replicate", "judge_replicate", "score"])
    out.insert(0, "run_id", run_id)
    out["judge_replicate"] = out["judge_replicate"].astype("Int64")
    return out


def nested(n_items, var_item, var_answer, var_judge, seed, answers=2, judgements=2, mean=0.5, category="c"):
    """Balanced nested normal data y = μ + item + answer(item) + judge(answer), and the true item effects."""
    rng = np.random.default_rng(seed)
    item = rng.normal(0, np.sqrt(var_item), n_items)
    y = (mean + item[:, None, None] + rng.normal(0, np.sqrt(var_answer), (n_items, answers, 1))
         + rng.normal(0, np.sqrt(var_judge), (n_items, answers, judgements)))
    i, a, j = np.meshgrid(np.arange(n_items), np.arange(1, answers + 1), np.arange(1, judgements + 1), indexing="ij")
    obs = pd.DataFrame({"run_id": "run", "item_id": [f"i{v:05d}" for v in i.ravel()], "category": category,
                        "model_replicate": a.ravel(), "judge_replicate": j.ravel(), "score": y.ravel()})
    return obs, mean + item


def gi_run(seed, ability=0.7, run_id="run"):
    """A synthetic ESAC-GI run: 29 deterministic items (1 observation), 7 judge-graded (2 × 2)."""
    rng = np.random.default_rng(seed)
    rows = []
    for category, item, judged in GI_ITEMS:
        if judged:
            base = np.clip(rng.normal(ability, 0.2), 0, 1)
            for m in (1, 2):
                answer = np.clip(base + rng.normal(0, 0.1), 0, 1)
                rows += [(item, category, m, j, float(np.clip(answer + rng.normal(0, 0.07), 0, 1))) for j in (1, 2)]
        else:
            rows.append((item, category, 1, None, float(rng.random() < ability)))
    return frame(rows, run_id)


def per_category(scores, categories):
    """A one-observation-per-item table from item scores, items grouped into categories."""
    rows = []
    for c, values in zip(categories, scores):
        rows += [(f"{c}/{k}", c, 1, None, float(v)) for k, v in enumerate(values)]
    return frame(rows)


# ---------------------------------------------------------------- item spread


def test_item_spread_by_hand():
    obs = frame([("w", "writing", 1, 1, 0.2), ("w", "writing", 1, 2, 0.4), ("w", "writing", 2, 1, 0.6),
                 ("w", "writing", 2, 2, 1.0), ("q", "quant", 1, None, 1.0)])
    spread = st.item_spread(obs)
    assert list(spread["item_id"]) == ["w"]  # deterministic items have no spread
    row = spread.iloc[0]
    assert row["n_obs"] == 4 and row["n_answers"] == 2
    assert row["mean"] == pytest.approx(0.55)
    assert row["answer_spread"] == pytest.approx(0.5 / np.sqrt(2))  # SD of the answer means 0.3 and 0.8
    assert row["judge_spread"] == pytest.approx(np.sqrt((0.01 + 0.01 + 0.04 + 0.04) / 2))  # pooled, df 2


def test_item_spread_of_a_single_answer_has_no_answer_spread():
    obs = frame([("w", "writing", 1, 1, 0.5), ("w", "writing", 1, 2, 0.7)])
    row = st.item_spread(obs).iloc[0]
    assert np.isnan(row["answer_spread"]) and row["judge_spread"] == pytest.approx(np.sqrt(0.02))


# ---------------------------------------------------------------- variance components


def test_components_recover_planted_values():
    truth = {"item": 0.04, "answer": 0.01, "judge": 0.005}
    obs, _ = nested(2000, truth["item"], truth["answer"], truth["judge"], seed=11)
    vc = st.variance_components(obs)
    assert (vc.n_items, vc.n_answers, vc.n_judgements, vc.n_items_excluded) == (2000, 2, 2, 0)
    assert (vc.df_item, vc.df_answer, vc.df_judge) == (1999, 2000, 4000)
    # Tolerance: 4 standard deviations of each estimator, from Var(MS) = 2 E[MS]² / df.
    ems_item = truth["judge"] + 2 * truth["answer"] + 4 * truth["item"]
    ems_answer = truth["judge"] + 2 * truth["answer"]
    sd_ms = {k: np.sqrt(2 / df) * e for k, df, e in
             [("item", 1999, ems_item), ("answer", 2000, ems_answer), ("judge", 4000, truth["judge"])]}
    assert abs(vc.var_item - truth["item"]) < 4 * np.hypot(sd_ms["item"], sd_ms["answer"]) / 4
    assert abs(vc.var_answer - truth["answer"]) < 4 * np.hypot(sd_ms["answer"], sd_ms["judge"]) / 2
    assert abs(vc.var_judge - truth["judge"]) < 4 * sd_ms["judge"]
    assert vc.var_item == vc.var_item_raw and vc.var_answer == vc.var_answer_raw


def test_mean_squares_match_statsmodels_nested_anova():
    sm = importlib.import_module("statsmodels.api")
    smf = importlib.import_module("statsmodels.formula.api")
    obs, _ = nested(60, 0.04, 0.01, 0.005, seed=5)
    vc = st.variance_components(obs)
    fit = smf.ols("score ~ C(item_id) + C(item_id):C(model_replicate)", data=obs).fit()
    table = sm.stats.anova_lm(fit, typ=1)
    assert table["mean_sq"].iloc[0] == pytest.approx(vc.ms_item, rel=1e-9)
    assert table["mean_sq"].iloc[1] == pytest.approx(vc.ms_answer, rel=1e-9)
    assert table["mean_sq"].iloc[2] == pytest.approx(vc.ms_judge, rel=1e-9)
    assert list(table["df"]) == [vc.df_item, vc.df_answer, vc.df_judge]


def test_components_match_statsmodels_mixedlm_reml():
    # For balanced data with positive estimates, REML equals the ANOVA (method of moments) estimator.
    smf = importlib.import_module("statsmodels.formula.api")
    obs, _ = nested(150, 0.04, 0.01, 0.005, seed=3)
    vc = st.variance_components(obs)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("score ~ 1", obs, groups="item_id", re_formula="1",
                          vc_formula={"answer": "0 + C(model_replicate)"}).fit(reml=True)
    assert fit.cov_re.iloc[0, 0] == pytest.approx(vc.var_item, rel=2e-3)
    assert fit.vcomp[0] == pytest.approx(vc.var_answer, rel=2e-3)
    assert fit.scale == pytest.approx(vc.var_judge, rel=2e-3)


def test_negative_component_is_truncated_and_raw_kept():
    rows = []
    for i, (m, d) in enumerate([(0.3, 0.1), (0.5, 0.2), (0.8, 0.05)]):
        # Both answers have the same mean, so MS_answer = 0 < MS_judge and the raw σ²_answer is negative.
        for a, values in ((1, (m - d, m + d)), (2, (m + d, m - d))):
            rows += [(f"w{i}", "writing", a, j, v) for j, v in enumerate(values, 1)]
    vc = st.variance_components(frame(rows))
    assert vc.ms_answer == pytest.approx(0, abs=1e-15)
    assert vc.var_answer_raw == pytest.approx(-vc.ms_judge / 2)
    assert vc.var_answer == 0.0 and vc.var_item_raw > 0
    assert vc.anova_table()["component"].tolist() == [vc.var_item, 0.0, vc.var_judge]


def test_incomplete_items_are_left_out_of_the_balanced_design():
    obs, _ = nested(20, 0.04, 0.01, 0.005, seed=2)
    full = st.variance_components(obs)
    cut = st.variance_components(obs.iloc[1:])  # the first item loses one judge replicate
    assert (cut.n_items, cut.n_items_excluded) == (19, 1)
    assert st.variance_components(obs[obs["item_id"] != "i00000"]).ms_item == pytest.approx(cut.ms_item)
    assert full.n_items == 20


def test_no_judged_items_gives_nan_everywhere():
    obs = frame([("q1", "quant", 1, None, 1.0), ("q2", "quant", 1, None, 0.0)])
    vc = st.variance_components(obs)
    assert vc.n_items == 0 and np.isnan([vc.var_item, vc.var_answer, vc.var_judge, vc.ms_item]).all()
    assert st.item_spread(obs).empty
    rel = st.judge_reliability(obs)
    assert rel.n_answers == 0 and np.isnan([rel.icc1, rel.alpha]).all()
    assert st.d_study(vc)[["se_item", "g_coefficient"]].isna().all().all()


def test_one_judged_item_has_no_item_component():
    obs, _ = nested(1, 0.04, 0.01, 0.005, seed=1)
    vc = st.variance_components(obs)
    assert vc.df_item == 0 and np.isnan(vc.ms_item) and np.isnan(vc.var_item)
    assert not np.isnan(vc.var_answer) and not np.isnan(vc.var_judge)


# ---------------------------------------------------------------- judge reliability


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # inside pingouin, under pandas 3
def test_icc_matches_pingouin():
    pg = importlib.import_module("pingouin")
    obs, _ = nested(80, 0.02, 0.01, 0.01, seed=8)
    rel = st.judge_reliability(obs)
    obs["answer"] = obs["item_id"] + "/" + obs["model_replicate"].astype(str)
    table = pg.intraclass_corr(obs, targets="answer", raters="judge_replicate", ratings="score").set_index("Type")
    assert rel.icc1 == pytest.approx(table.loc["ICC(1,1)", "ICC"], rel=1e-9)
    assert rel.icc1k == pytest.approx(table.loc["ICC(1,k)", "ICC"], rel=1e-9)
    assert rel.ms_between / rel.ms_within == pytest.approx(table.loc["ICC(1,1)", "F"], rel=1e-9)
    low, high = table.loc["ICC(1,1)", "CI95"]  # pingouin rounds its interval to 2 decimals
    assert rel.icc1_low == pytest.approx(low, abs=0.006) and rel.icc1_high == pytest.approx(high, abs=0.006)
    assert rel.n_answers == 160 and rel.n_judgements == 2


def test_alpha_matches_the_krippendorff_package():
    krippendorff = importlib.import_module("krippendorff")
    obs, _ = nested(80, 0.02, 0.01, 0.01, seed=9)
    wide = obs.pivot_table(index=["item_id", "model_replicate"], columns="judge_replicate", values="score")
    expected = krippendorff.alpha(reliability_data=wide.to_numpy().T, level_of_measurement="interval")
    assert st.judge_reliability(obs).alpha == pytest.approx(expected, rel=1e-9)


def test_alpha_with_uneven_judgements_matches_the_krippendorff_package():
    krippendorff = importlib.import_module("krippendorff")
    obs, _ = nested(40, 0.02, 0.01, 0.01, seed=10, judgements=3)
    rng = np.random.default_rng(0)
    obs = obs.drop(index=rng.choice(len(obs), 70, replace=False))  # answers with 3, 2, 1 or 0 judgements
    wide = obs.pivot_table(index=["item_id", "model_replicate"], columns="judge_replicate", values="score")
    wide = wide.reindex(columns=[1, 2, 3])
    expected = krippendorff.alpha(reliability_data=wide.to_numpy().T, level_of_measurement="interval")
    assert st.judge_reliability(obs).alpha == pytest.approx(expected, rel=1e-9)


def test_perfect_and_uninformative_judges():
    rows = [(f"w{i}", "writing", a, j, v) for i, (a, v) in enumerate([(1, 0.2), (2, 0.9), (1, 0.5)]) for j in (1, 2)]
    rel = st.judge_reliability(frame(rows))
    assert rel.icc1 == pytest.approx(1.0) and rel.alpha == pytest.approx(1.0) and rel.icc1k == pytest.approx(1.0)
    same = frame([(f"w{i}", "writing", 1, j, 0.5) for i in range(3) for j in (1, 2)])
    rel = st.judge_reliability(same)  # no variance at all: agreement is undefined, not perfect
    assert np.isnan(rel.icc1) and np.isnan(rel.alpha)


# ---------------------------------------------------------------- D-study


def test_d_study_formulas_and_monotonicity():
    obs, _ = nested(50, 0.04, 0.01, 0.005, seed=4)
    vc = st.variance_components(obs)
    table = st.d_study(vc, n_items=5, points=5).set_index(["answers", "judgements"])
    error = vc.var_answer / 2 + vc.var_judge / 4
    row = table.loc[(2, 2)]
    assert row["se_item"] == pytest.approx(np.sqrt(error))
    assert row["g_coefficient"] == pytest.approx(vc.var_item / (vc.var_item + error))
    assert row["se_category_fixed"] == pytest.approx(5 * np.sqrt(error / 5))
    assert row["se_category_random"] == pytest.approx(5 * np.sqrt((vc.var_item + error) / 5))
    assert len(table) == 12 and row["observations"] == 4
    for j in (1, 2, 4):
        assert table.xs(j, level="judgements")["se_item"].is_monotonic_decreasing


def test_d_study_se_is_the_spread_of_item_means_around_the_truth():
    obs, truth = nested(4000, 0.04, 0.01, 0.005, seed=6)
    means = obs.groupby("item_id")["score"].mean().to_numpy()
    se = st.d_study(st.variance_components(obs)).set_index(["answers", "judgements"]).loc[(2, 2), "se_item"]
    assert np.std(means - truth, ddof=1) == pytest.approx(se, rel=0.05)
    assert se == pytest.approx(np.sqrt(0.01 / 2 + 0.005 / 4), rel=0.05)


# ---------------------------------------------------------------- category intervals


def test_category_scores_match_the_scoring_module_and_the_exact_interval():
    obs = gi_run(seed=1)
    table = st.category_intervals(obs, GI_WEIGHTS, GI_POINTS).set_index("category")
    item_scores = obs.groupby("item_id")["score"].mean()
    for category, (points, n, _) in GI.items():
        members = [(item_scores[i], GI_WEIGHTS[i]) for c, i, _ in GI_ITEMS if c == category]
        row = table.loc[category]
        assert row["score"] == pytest.approx(category_points(points, members))
        assert row["n_items"] == n and row["threshold"] == pytest.approx(0.6 * points)
    quant = table.loc["quant"]  # five 0/1 items: Clopper–Pearson on x of 5
    x = 5 * quant["score"] / 15
    assert quant["low"] == pytest.approx(15 * stats.beta.ppf(0.025, x, 5 - x + 1))
    assert quant["high"] == pytest.approx(15 * stats.beta.ppf(0.975, x + 1, 5 - x))
    assert quant["p_pass"] == pytest.approx(stats.beta.sf(0.6, x, 5 - x + 1))
    writing = np.array([item_scores["writing-0"], item_scores["writing-1"]])  # equal weights: s / √n
    row = table.loc["writing"]
    assert row["se"] == pytest.approx(10 * writing.std(ddof=1) / np.sqrt(2)) and row["df"] == 1
    overall = table.loc["overall"]
    assert overall["score"] == pytest.approx(table["score"].iloc[:-1].sum())
    assert overall["se"] == pytest.approx(np.sqrt((table["se"].iloc[:-1] ** 2).sum()))
    assert overall["points"] == 100 and overall["threshold"] == 60 and overall["n_items"] == 36
    assert 0 < overall["low"] < overall["score"] < overall["high"] < 100  # the total row has an interval
    item_points = [GI_POINTS[c] * GI_WEIGHTS[i] / sum(GI_WEIGHTS[j] for d, j, _ in GI_ITEMS if d == c)
                   for c, i, _ in GI_ITEMS]
    assert overall["n_eff"] == pytest.approx(sum(item_points) ** 2 / sum(v * v for v in item_points))


def test_a_two_item_category_shows_the_fixed_items_se_and_no_interval():
    obs = gi_run(seed=1)
    row = st.category_intervals(obs, GI_WEIGHTS, GI_POINTS).set_index("category").loc["writing"]
    assert np.isnan(row[["low", "high", "boot_low", "boot_high"]].astype(float)).all()  # no 0–10 interval
    assert "no interval" in row["note"] and "fixed" in row["note"]
    # Fixed items: Var(item mean) = s²(answer means) / a, over the 2 answers × 2 judge calls of each item.
    answers = obs[obs["category"] == "writing"].groupby(["item_id", "model_replicate"])["score"].mean()
    var = answers.groupby(level=0).var(ddof=1) / 2
    assert row["se_fixed"] == pytest.approx(10 * np.sqrt(var.sum()) / 2)
    assert row["label"] == st.INCONCLUSIVE  # the exact bound of 2 items can neither clear nor miss 60 %


def test_weighted_standard_error_by_hand():
    # calibration: weights 1, 1, 1, 1, 0.5 (amendment 001 §2); σ̂² = Σw(s − μ̂)² / (Σw − Σw²/Σw), SE = σ̂ √Σw² / Σw.
    s = np.array([0.9, 0.4, 0.7, 0.6, 0.2])
    w = np.array([1, 1, 1, 1, 0.5])
    obs = frame([(f"calibration-{k}", "calibration", 1, None, v) for k, v in enumerate(s)])
    row = st.category_intervals(obs, GI_WEIGHTS, {"calibration": 5}).iloc[0]
    mu = (w * s).sum() / w.sum()
    var = (w * (s - mu) ** 2).sum() / (w.sum() - (w ** 2).sum() / w.sum())
    assert row["score"] == pytest.approx(5 * mu)
    assert row["se"] == pytest.approx(5 * np.sqrt(var * (w ** 2).sum()) / w.sum())
    assert row["n_eff"] == pytest.approx(w.sum() ** 2 / (w ** 2).sum())


def test_labels_pass_fail_inconclusive_and_edge_cases():
    points = {"sure": 10, "fails": 10, "unsure": 10, "single": 10, "absent": 10}
    rows = [(f"sure{k}", "sure", 1, None, v) for k, v in enumerate([1.0] * 11 + [0.9])]
    rows += [(f"fails{k}", "fails", 1, None, v) for k, v in enumerate([0.1, 0.2, 0.15, 0.1, 0.05, 0.12])]
    rows += [(f"unsure{k}", "unsure", 1, None, v) for k, v in enumerate([0.0, 1.0, 1.0, 1.0, 0.0, 1.0])]
    rows += [("single0", "single", 1, None, 1.0)]
    table = st.category_intervals(frame(rows), None, points).set_index("category")
    assert table.loc["sure", "label"] == st.PASS and table.loc["sure", "p_pass"] >= 0.975
    assert table.loc["fails", "label"] == st.FAIL and table.loc["fails", "p_pass"] < 0.01
    assert table.loc["unsure", "label"] == st.INCONCLUSIVE and 0.3 < table.loc["unsure", "p_pass"] < 0.975
    single = table.loc["single"]  # one item: no spread and no interval; one exact trial cannot decide
    assert single["score"] == 10 and single["label"] == st.INCONCLUSIVE
    assert np.isnan(single[["se", "low", "high", "boot_low", "boot_high"]].astype(float)).all()
    absent = table.loc["absent"]
    assert absent["n_items"] == 0 and np.isnan(absent["score"]) and absent["label"] == st.INCONCLUSIVE
    assert np.isnan(table.loc["overall", "score"]) and table.loc["overall", "label"] == st.INCONCLUSIVE
    assert st.suite_verdict(table) == st.FAIL


def test_five_perfect_items_have_an_exact_lower_bound_below_the_maximum():
    # Was: SE 0 collapsed the t interval to [15, 15] with P(pass) = 1; Clopper–Pearson gives 15 × 0.025^(1/5).
    rows = [(f"a{k}", "a", 1, None, 1.0) for k in range(5)] + [(f"b{k}", "b", 1, None, 0.6) for k in range(5)]
    table = st.category_intervals(frame(rows), None, {"a": 15, "b": 5}).set_index("category")
    a = table.loc["a"]
    assert a["se"] == 0 and a["high"] == 15 and a["low"] == pytest.approx(15 * 0.025 ** 0.2) and a["low"] < 15
    assert a["p_pass"] == pytest.approx(1 - 0.6 ** 5) and a["label"] == st.INCONCLUSIVE
    b = table.loc["b"]  # 3/5 exactly at 60 %: the observed rule passes it (§10), the exact bound cannot
    assert b["low"] < 3 < b["high"] and b["label"] == st.INCONCLUSIVE
    rows = [(f"c{k}", "c", 1, None, 0.0) for k in range(8)]
    row = st.category_intervals(frame(rows), None, {"c": 10}).iloc[0]
    assert row["low"] == 0 and row["high"] < 6 and row["p_pass"] == 0.0 and row["label"] == st.FAIL


def test_labels_false_pass_at_most_2_5_percent_at_the_line():
    # A seeded small version of benchmarks/intervals.py: true share = the pass line, binary and fractional items.
    rng = np.random.default_rng(23)
    sims, line = 4000, 0.6
    for n in (2, 3, 5, 12):
        for scores in ((rng.random((sims, n)) < line).astype(float), rng.beta(4 * line, 4 * (1 - line), (sims, n))):
            names = [f"s{k:04d}" for k in range(sims)]
            table = st.category_intervals(per_category(scores, categories=names), None, dict.fromkeys(names, 10),
                                          n_boot=1).iloc[:-1]
            assert (table["label"] == st.PASS).mean() <= 0.025, n
            assert ((table["p_pass"] >= 0.975) == (table["label"] == st.PASS)).all()


def test_exact_interval_covers_the_true_mean_at_least_95_percent():
    # 2000 simulated 10-item categories in one call; item scores ~ Beta(5, 3), true category score 10 × 5/8.
    rng = np.random.default_rng(21)
    sims, n = 2000, 10
    scores = rng.beta(5, 3, (sims, n))
    names = [f"s{k:04d}" for k in range(sims)]
    table = st.category_intervals(per_category(scores, categories=names), None, dict.fromkeys(names, 10),
                                  n_boot=1000).iloc[:-1]
    truth = 10 * 5 / 8
    cover = ((table["low"] <= truth) & (truth <= table["high"])).mean()
    boot_cover = ((table["boot_low"] <= truth) & (truth <= table["boot_high"])).mean()
    assert cover >= 0.95, cover
    assert 0.86 <= boot_cover <= 0.95, boot_cover  # the percentile bootstrap is short for 10 items


def test_weighted_exact_interval_coverage_with_the_calibration_weights():
    rng = np.random.default_rng(22)
    sims = 2000
    names = [f"s{k:04d}" for k in range(sims)]
    scores = (rng.random((sims, 5)) < 0.6).astype(float)
    obs = per_category(scores, categories=names)
    weights = {f"{c}/{k}": (0.5 if k == 4 else 1.0) for c in names for k in range(5)}
    table = st.category_intervals(obs, weights, dict.fromkeys(names, 5), n_boot=1).iloc[:-1]
    cover = ((table["low"] <= 3) & (3 <= table["high"])).mean()
    assert cover >= 0.95, cover


def test_bootstrap_is_deterministic_order_free_and_of_the_right_width():
    obs = gi_run(seed=3)
    first = st.category_intervals(obs, GI_WEIGHTS, GI_POINTS, seed=7)
    pd.testing.assert_frame_equal(first, st.category_intervals(obs, GI_WEIGHTS, GI_POINTS, seed=7))
    shuffled = obs.sample(frac=1, random_state=1).reset_index(drop=True)
    pd.testing.assert_frame_equal(first, st.category_intervals(shuffled, GI_WEIGHTS, GI_POINTS, seed=7))
    other = st.category_intervals(obs, GI_WEIGHTS, GI_POINTS, seed=8)
    assert not np.allclose(first["boot_low"], other["boot_low"])
    # For many items the percentile interval is score ± 1.96 × the plug-in SE (s √((n−1)/n) / √n).
    rng = np.random.default_rng(5)
    values = rng.beta(2, 2, 200)
    row = st.category_intervals(per_category([values], categories=["x"]), None, {"x": 1}, n_boot=20000).iloc[0]
    plug_in = values.std(ddof=0) / np.sqrt(200)
    assert row["boot_high"] - row["boot_low"] == pytest.approx(2 * 1.96 * plug_in, rel=0.05)
    assert (row["boot_high"] + row["boot_low"]) / 2 == pytest.approx(values.mean(), abs=0.2 * plug_in)


def test_bad_inputs_are_refused_with_a_clear_message():
    obs = gi_run(seed=1)
    with pytest.raises(ValueError, match="lacks column"):
        st.item_spread(obs.drop(columns="judge_replicate"))
    with pytest.raises(ValueError, match="one run at a time"):
        st.variance_components(pd.concat([obs, gi_run(2, run_id="other")]))
    with pytest.raises(ValueError, match="duplicate observation"):
        st.variance_components(pd.concat([obs, obs[obs["item_id"] == "writing-0"].iloc[:1]]))
    with pytest.raises(KeyError, match="no weight"):
        st.category_intervals(obs, {"quant-0": 1.0}, GI_POINTS)
    with pytest.raises(KeyError, match="no points"):
        st.category_intervals(obs, GI_WEIGHTS, {"quant": 15})
    moved = obs.copy()
    moved.loc[moved["item_id"] == "writing-0", "category"] = ["writing", "writing", "writing", "calibration"]
    with pytest.raises(ValueError, match="two categories"):
        st.category_intervals(moved, GI_WEIGHTS, GI_POINTS)
    with pytest.raises(ValueError, match="differ in items"):
        st.paired_comparison(obs, obs[obs["item_id"] != "quant-0"], GI_WEIGHTS, GI_POINTS)


# ---------------------------------------------------------------- Holm and paired comparisons


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04 → running max 0.02, 0.03, 0.06, 0.06
    assert st.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = st.holm([0.5, np.nan, 0.4])  # NaN is not a hypothesis: m = 2
    assert adjusted[0] == pytest.approx(0.8) and np.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.8)
    assert st.holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    multitest = importlib.import_module("statsmodels.stats.multitest")
    p = np.random.default_rng(0).uniform(0, 0.1, 8)
    assert st.holm(p) == pytest.approx(multitest.multipletests(p, method="holm")[1])


def planted_pair(seed, effects, n_items=40, noise=0.1):
    """Two runs on 8 categories of n_items items; run B adds effects[c] to category c's item scores."""
    rng = np.random.default_rng(seed)
    names = [f"k{c}" for c in range(len(effects))]
    base = rng.uniform(0.3, 0.7, (len(names), n_items))
    a = base + rng.normal(0, noise, base.shape)
    b = base + np.array(effects)[:, None] + rng.normal(0, noise, base.shape)
    return per_category(a, categories=names), per_category(b, categories=names), dict.fromkeys(names, 10)


def test_paired_comparison_finds_a_planted_difference():
    effects = [0.15, 0, 0, -0.15, 0, 0, 0, 0]
    obs_a, obs_b, points = planted_pair(31, effects)
    table = st.paired_comparison(obs_a, obs_b, None, points).set_index("category")
    for category, effect in zip(points, effects):
        row = table.loc[category]
        assert row["ci_low"] <= 10 * effect <= row["ci_high"]
        if effect:
            assert row["p_holm"] < 0.001 and np.sign(row["diff"]) == np.sign(effect)
        else:
            assert row["p_holm"] > 0.05
    # Independent checks: scipy's paired t-test and numpy's correlation on one category.
    a = obs_a[obs_a["category"] == "k0"]["score"].to_numpy()
    b = obs_b[obs_b["category"] == "k0"]["score"].to_numpy()
    test = stats.ttest_rel(b, a)
    row = table.loc["k0"]
    assert row["t"] == pytest.approx(test.statistic) and row["p_value"] == pytest.approx(test.pvalue)
    assert row["corr"] == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert row["diff"] == pytest.approx(row["score_b"] - row["score_a"])
    # Holm column = a hand Holm over the category p-values; the overall row is not part of the family.
    p = table["p_value"].iloc[:-1].to_numpy()
    order = np.argsort(p)
    hand = np.empty(len(p))
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[index]))
        hand[index] = running
    assert table["p_holm"].iloc[:-1].to_numpy() == pytest.approx(hand)
    assert np.isnan(table.loc["overall", "p_holm"])
    overall = table.loc["overall"]
    assert overall["diff"] == pytest.approx(table["diff"].iloc[:-1].sum())
    assert overall["se"] == pytest.approx(np.sqrt((table["se"].iloc[:-1] ** 2).sum()))


def test_minimum_detectable_effect_has_80_percent_power():
    # 1000 simulated 30-item categories whose true difference equals the MDE computed from the true SD.
    rng = np.random.default_rng(41)
    sims, n, sd = 1000, 30, 0.2
    se = sd / np.sqrt(n)
    true_mde = (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * se
    names = [f"s{k:04d}" for k in range(sims)]
    a = rng.uniform(0.2, 0.8, (sims, n))
    b = a + true_mde + rng.normal(0, sd, (sims, n))
    table = st.paired_comparison(per_category(a, categories=names), per_category(b, categories=names), None,
                                 dict.fromkeys(names, 1)).iloc[:-1]
    power = (table["p_value"] < 0.05).mean()
    assert 0.75 <= power <= 0.85, power
    assert table["mde"].median() == pytest.approx(true_mde, rel=0.05)


def test_identical_runs_and_a_constant_shift():
    obs = gi_run(seed=4)
    table = st.paired_comparison(obs, obs, GI_WEIGHTS, GI_POINTS)
    assert (table["diff"] == 0).all() and (table["p_value"] == 1).all() and (table["se"] == 0).all()
    rows = [(f"x{k}", "x", 1, None, v) for k, v in enumerate([0.2, 0.4, 0.5])]
    shifted = [(i, c, m, j, v + 0.1) for i, c, m, j, v in rows]
    row = st.paired_comparison(frame(rows), frame(shifted), None, {"x": 10}).iloc[0]
    assert row["diff"] == pytest.approx(1.0) and row["se"] == pytest.approx(0, abs=1e-12)
    assert row["corr"] == pytest.approx(1.0)


def test_an_empty_run_gives_empty_or_undefined_results():
    empty = gi_run(seed=1).iloc[:0]
    table = st.category_intervals(empty, GI_WEIGHTS, GI_POINTS)
    assert (table["n_items"] == 0).all() and (table["label"] == st.INCONCLUSIVE).all()
    assert table["score"].isna().all() and st.suite_verdict(table) == st.INCONCLUSIVE
    assert st.paired_comparison(empty, empty, GI_WEIGHTS, GI_POINTS)["p_value"].isna().all()
    assert st.item_spread(empty).empty and st.variance_components(empty).n_items == 0
