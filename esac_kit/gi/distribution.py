"""ESAC-GI's distribution per major: 100 points in 36 items, as amendment 001 §6 fixes it and specs/esac-gi.md
states it; the loader asserts the manifest against it (esac_kit.distribution)."""

from esac_kit.distribution import Distribution

# amendment 001 §6 fixes the distribution of ESAC-GI, not of one release: the hardened 2.x keeps it (SPEC §9 hardens
# the items, not the table). Figures as in specs/esac-gi.md "Categories".
ESAC_GI = Distribution(
    source="amendment 001 §6, specs/esac-gi.md",
    categories={"quant": (15, 5), "logic": (15, 5), "code": (15, 5), "instructions": (10, 5), "context": (15, 5),
                "honesty": (15, 4), "calibration": (5, 5), "writing": (10, 2)},
    total_items=36,
)
assert ESAC_GI.total_points == 100

DISTRIBUTIONS = {"gi": {1: ESAC_GI, 2: ESAC_GI}}
